/*
 * Sets of live handles (communicators), so that destroying one twice, or
 * after an abort that freed it, is refused instead of touching freed
 * memory. A destroyed handle's memory is kept (buried) until
 * WEFT_HANDLE_GRAVE later destroys, so a stale pointer does not meet a
 * new object at the same address soon after.
 */
#ifndef WEFT_HANDLES_H
#define WEFT_HANDLES_H

#include <pthread.h>
#include <stddef.h>

#define WEFT_HANDLE_GRAVE 64

typedef struct {
    pthread_mutex_t lock;
    void **live;
    size_t n, cap;
    void *grave[WEFT_HANDLE_GRAVE];
    unsigned next;
} weft_handle_set_t;

#define WEFT_HANDLE_SET_INIT {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, {0}, 0}

/* 1 on success, 0 without memory. */
int weft_handle_add(weft_handle_set_t *s, void *h);
/* Removes @p h; 1 if it was live, 0 if not (never added, or taken). */
int weft_handle_take(weft_handle_set_t *s, void *h);
/* 1 if @p h is live. */
int weft_handle_live(weft_handle_set_t *s, void *h);
/* Runs @p fn on @p h while it is live, under the set's lock, so that no
 * take (a destroy) frees it meanwhile; 1 if it ran, 0 if @p h is not
 * live. @p fn must not touch the set. */
int weft_handle_with_live(weft_handle_set_t *s, void *h, void (*fn)(void *h, void *arg), void *arg);
/* Frees @p h (a taken handle) later: frees the oldest buried one. */
void weft_handle_bury(weft_handle_set_t *s, void *h);

#endif

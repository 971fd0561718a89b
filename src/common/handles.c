#include "config.h"
#include "handles.h"

#include <stdlib.h>

int weft_handle_add(weft_handle_set_t *s, void *h)
{
    int ok = 1;
    pthread_mutex_lock(&s->lock);
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        void **live = realloc(s->live, cap * sizeof(*live));
        if (live) {
            s->live = live;
            s->cap = cap;
        } else {
            ok = 0;
        }
    }
    if (ok)
        s->live[s->n++] = h;
    pthread_mutex_unlock(&s->lock);
    return ok;
}

int weft_handle_take(weft_handle_set_t *s, void *h)
{
    int found = 0;
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < s->n; i++) {
        if (s->live[i] == h) {
            s->live[i] = s->live[--s->n];
            found = 1;
            break;
        }
    }
    if (s->n == 0) {
        free(s->live);
        s->live = NULL;
        s->cap = 0;
    }
    pthread_mutex_unlock(&s->lock);
    return found;
}

/* 1 if @p h is live; the caller holds the lock. */
static int live_locked(const weft_handle_set_t *s, const void *h)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->live[i] == h)
            return 1;
    return 0;
}

int weft_handle_live(weft_handle_set_t *s, void *h)
{
    int found;
    pthread_mutex_lock(&s->lock);
    found = live_locked(s, h);
    pthread_mutex_unlock(&s->lock);
    return found;
}

int weft_handle_with_live(weft_handle_set_t *s, void *h, void (*fn)(void *h, void *arg), void *arg)
{
    int found;
    pthread_mutex_lock(&s->lock);
    if ((found = live_locked(s, h)))
        fn(h, arg);
    pthread_mutex_unlock(&s->lock);
    return found;
}

void weft_handle_bury(weft_handle_set_t *s, void *h)
{
    void *old;
    pthread_mutex_lock(&s->lock);
    old = s->grave[s->next];
    s->grave[s->next] = h;
    s->next = (s->next + 1) % WEFT_HANDLE_GRAVE;
    pthread_mutex_unlock(&s->lock);
    free(old);
}

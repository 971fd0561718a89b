/* Channels: what the core's files share of them. */
#ifndef WEFT_CHANNEL_H
#define WEFT_CHANNEL_H

/* WEFT_NVLS_ENABLE=1 and not NCCL_NVLS_ENABLE=0: the switch channel may
 * use the backend's multicast. */
int weft_switch_enabled(void);

#endif

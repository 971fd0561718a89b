/* The proxy service: what the communicator asks of its proxies. */
#ifndef WEFT_PROXY_H
#define WEFT_PROXY_H

#include "comm.h"

/* Logs what each of the communicator's proxies is doing (a device wait on
 * a proxy gave up): triggers executed, and the step it is in and for how
 * long. */
void weft_proxy_report(weft_comm_t *comm);

#endif

/* relay.h — running a function on the thread that called into the engine.
 *
 * Host callbacks (operators written in Lua: src/ops/custom.c) may only run on the thread
 * that called the engine (DESIGN.md "Callbacks into Lua"): LuaJIT states are not thread
 * safe. Work that the engine spreads over its own threads (the data-parallel group's
 * per-context workers, src/exec/group.c) reaches such a callback through a relay: the
 * worker posts the call and sleeps; the calling thread, which is waiting for its workers
 * anyway, runs posted calls while it waits and wakes the worker when one is done.
 *
 * A relay is owned by whoever starts the workers. Each worker thread binds it once
 * (lmx_relay_bind_thread); lmx_relay_call on a thread with no relay bound (the caller's
 * own thread, a one-context group, the imperative path) just calls the function.
 * The relay shares its owner's mutex and wake-up condition: lmx_relay_serve must be
 * called with that mutex held, as part of the owner's wait loop, so a posted call and
 * "all workers are done" wake the same waiter.
 * Errors: the status is returned to the worker and the message set on the caller's
 * thread is copied into the worker's thread-local message (status.h).
 */
#ifndef LMX_CORE_RELAY_H
#define LMX_CORE_RELAY_H

#include <pthread.h>

typedef int (*lmx_relay_fn)(void *arg);

typedef struct lmx_relay_req lmx_relay_req;

typedef struct lmx_relay {
  pthread_mutex_t *mu;  /* the owner's mutex (held by the waiter) */
  pthread_cond_t *wake; /* signalled when a call is posted (the owner's wait condition) */
  pthread_cond_t done;  /* broadcast when a posted call has finished */
  lmx_relay_req *head;  /* posted calls, oldest first */
  lmx_relay_req *tail;
} lmx_relay;

void lmx_relay_init(lmx_relay *r, pthread_mutex_t *mu, pthread_cond_t *wake);
void lmx_relay_destroy(lmx_relay *r);

/* Binds r (may be NULL: unbinds) to the calling thread. */
void lmx_relay_bind_thread(lmx_relay *r);

/* Runs fn(arg) on the relay's owner thread when this thread has one bound, else here.
 * Returns fn's status. */
int lmx_relay_call(lmx_relay_fn fn, void *arg);

/* With r->mu held: runs every posted call (unlocking the mutex while each runs).
 * Returns 1 when it ran at least one. */
int lmx_relay_serve(lmx_relay *r);

#endif

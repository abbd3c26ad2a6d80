/* relay.c — posting calls to the engine's calling thread (see relay.h).
 *
 * A request lives on the posting worker's stack: the worker sleeps until `finished` is
 * set, so the request outlives its stay in the queue. The serving thread copies its own
 * message for a failing call into the request before marking it finished.
 */
#include <stdio.h>

#include "relay.h"
#include "status.h"

struct lmx_relay_req {
  lmx_relay_fn fn;
  void *arg;
  int rc;
  int finished;
  char msg[LMX_ERRMSG_CAP];
  lmx_relay_req *next;
};

static _Thread_local lmx_relay *t_relay;

void lmx_relay_init(lmx_relay *r, pthread_mutex_t *mu, pthread_cond_t *wake) {
  r->mu = mu;
  r->wake = wake;
  r->head = r->tail = NULL;
  pthread_cond_init(&r->done, NULL);
}

void lmx_relay_destroy(lmx_relay *r) { pthread_cond_destroy(&r->done); }

void lmx_relay_bind_thread(lmx_relay *r) { t_relay = r; }

int lmx_relay_call(lmx_relay_fn fn, void *arg) {
  lmx_relay *r = t_relay;
  if (!r) return fn(arg);
  lmx_relay_req q = {.fn = fn, .arg = arg};
  pthread_mutex_lock(r->mu);
  if (r->tail) r->tail->next = &q;
  else r->head = &q;
  r->tail = &q;
  pthread_cond_broadcast(r->wake);
  while (!q.finished) pthread_cond_wait(&r->done, r->mu);
  pthread_mutex_unlock(r->mu);
  if (q.rc != 0) return lmx_fail(q.rc, "%s", q.msg);
  return 0;
}

int lmx_relay_serve(lmx_relay *r) {
  int ran = 0;
  while (r->head) {
    lmx_relay_req *q = r->head;
    r->head = q->next;
    if (!r->head) r->tail = NULL;
    pthread_mutex_unlock(r->mu);
    lmx_clear_error();
    q->rc = q->fn(q->arg);
    if (q->rc != 0) snprintf(q->msg, sizeof q->msg, "%s", lmx_errmsg());
    pthread_mutex_lock(r->mu);
    q->finished = 1;
    ran = 1;
    pthread_cond_broadcast(&r->done);
  }
  return ran;
}

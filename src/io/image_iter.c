/* image_iter.c — lmx_imagerec_iter: MXNet's ImageRecordIter over a .rec file.
 *
 * Creation reads the record offsets (the .idx, or a scan of the .rec), keeps this
 * part's share [part*n/num_parts, (part+1)*n/num_parts) and starts the workers.
 * An epoch is a sequence of positions 0..nbatch*B-1 (B = batch_size); position g holds
 * the record order[g] (order[g mod n] past the end with LMX_LAST_BATCH_ROUND, zeros with
 * LMX_LAST_BATCH_PAD). Workers claim positions in increasing order under the mutex and
 * decode them into a ring of `prefetch_buffer` batch slots: batch b lives in slot
 * b mod K and may start only once the consumer has taken batch b-K. The consumer waits
 * for its slot to count B finished samples, copies it out and frees the slot.
 *
 * Determinism: the shuffle is drawn from (seed, epoch) and each sample's crop and
 * mirror from (seed, epoch, position), so the batches do not depend on the number of
 * threads or their timing. reset() stops and joins the workers, advances the epoch and
 * starts them again. A worker's error (unreadable record, bad image, image smaller than
 * the crop) is kept in its slot with the position's record offset, and reported by the
 * next() that reaches that batch.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../api/api.h"
#include "../core/alloc.h"
#include "image.h"
#include "image_aug.h"
#include "recordio.h"

enum { IR_HEADER = 24, ERR_CAP = 600 };

typedef struct slot {
  float *data, *label;
  int done, failed;
  char err[ERR_CAP];
} slot;

struct lmx_imagerec_iter {
  lmx_imagerec_config cfg;
  char *rec_path;
  int fd;
  uint64_t fsize;
  uint64_t *offsets; /* this part's records */
  int64_t n, nbatch;
  int64_t *order;
  const lmx_image_ops *codec;
  size_t sample_elems;
  /* shared state, under mu */
  pthread_mutex_t mu;
  pthread_cond_t work, ready;
  pthread_t *threads;
  int nthreads, stop;
  int64_t next_pos, consumed;
  uint64_t epoch;
  slot *slots;
};

/* ------------------------------------------------------------ randomness ---- */

static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* Uniform integer in [0, n) from state *s (n small: the modulo bias is negligible). */
static int64_t draw(uint64_t *s, int64_t n) {
  *s = mix(*s);
  return n > 0 ? (int64_t)((*s >> 11) % (uint64_t)n) : 0;
}

static void shuffle_epoch(lmx_imagerec_iter *it) {
  for (int64_t i = 0; i < it->n; i++) it->order[i] = i;
  if (!it->cfg.shuffle) return;
  uint64_t s = mix((uint64_t)(uint32_t)it->cfg.seed ^ mix(it->epoch + 1));
  for (int64_t i = it->n - 1; i > 0; i--) {
    int64_t j = draw(&s, i + 1), t = it->order[i];
    it->order[i] = it->order[j], it->order[j] = t;
  }
}

/* ------------------------------------------------------------ one sample ---- */

static int fail_at(char *err, uint64_t off, const char *path, const char *fmt, const char *what) {
  snprintf(err, ERR_CAP, "ImageRecordIter: %s: record at offset %llu: %s%s", path,
           (unsigned long long)off, fmt, what ? what : "");
  return -1;
}

/* Decodes and augments the record at position g into the slot's row. */
static int process(lmx_imagerec_iter *it, int64_t g, uint64_t epoch, lmx_rio_buf *buf,
                   unsigned char **tmp, size_t *tmpcap, float *data, float *label, char *err) {
  const lmx_imagerec_config *c = &it->cfg;
  int64_t idx = g < it->n ? it->order[g] : it->order[g % it->n];
  uint64_t off = it->offsets[idx], next;
  int got;
  if (g >= it->n && c->last_batch == LMX_LAST_BATCH_PAD) {
    memset(data, 0, it->sample_elems * sizeof *data);
    memset(label, 0, (size_t)c->label_width * sizeof *label);
    return 0;
  }
  if (lmx_rio_read_at(it->fd, it->rec_path, it->fsize, off, buf, &next, &got) != LMX_OK) {
    snprintf(err, ERR_CAP, "ImageRecordIter: %s", lmx_errmsg());
    return -1;
  }
  if (!got) return fail_at(err, off, it->rec_path, "past the end of the file", NULL);
  if (buf->len < IR_HEADER)
    return fail_at(err, off, it->rec_path, "shorter than the 24-byte image record header", NULL);
  uint32_t flag;
  float lab;
  memcpy(&flag, buf->p, 4);
  memcpy(&lab, buf->p + 4, 4);
  size_t skip = IR_HEADER;
  if (flag > 0) {
    if ((int64_t)flag != c->label_width) {
      char m[160];
      snprintf(m, sizeof m, "it holds %u labels but label_width is %d", flag, c->label_width);
      return fail_at(err, off, it->rec_path, m, NULL);
    }
    if ((buf->len - IR_HEADER) / 4 < flag)
      return fail_at(err, off, it->rec_path, "its label array runs past the record", NULL);
    memcpy(label, buf->p + IR_HEADER, (size_t)flag * 4);
    skip += (size_t)flag * 4;
  } else {
    if (c->label_width != 1)
      return fail_at(err, off, it->rec_path,
                     "it holds one label; label_width > 1 needs records packed with a label array",
                     NULL);
    label[0] = lab;
  }
  unsigned char *pix;
  int h, w, ch;
  char cerr[400];
  if (it->codec->decode(buf->p + skip, buf->len - skip, c->channels == 1 ? 0 : 1, &pix, &h, &w,
                        &ch, cerr, sizeof cerr))
    return fail_at(err, off, it->rec_path, "cannot decode the image: ", cerr);
  const unsigned char *src = pix;
  if (c->resize > 0) {
    int nh, nw;
    lmx_aug_resize_dims(h, w, c->resize, &nh, &nw);
    size_t need = (size_t)nh * (size_t)nw * (size_t)ch;
    if (need > *tmpcap) {
      unsigned char *t = lmx_realloc(*tmp, need);
      if (!t) {
        it->codec->release(pix);
        return fail_at(err, off, it->rec_path, "out of memory for the resized image", NULL);
      }
      *tmp = t, *tmpcap = need;
    }
    lmx_aug_resize(pix, h, w, ch, *tmp, nh, nw);
    src = *tmp, h = nh, w = nw;
  }
  int rc = 0;
  if (h < c->height || w < c->width) {
    char m[200];
    snprintf(m, sizeof m, "the image is %dx%d (HxW) after resize, smaller than data_shape %dx%d",
             h, w, c->height, c->width);
    rc = fail_at(err, off, it->rec_path, m, NULL);
  } else {
    uint64_t s = mix(mix((uint64_t)(uint32_t)c->seed ^ mix(epoch + 1)) ^ (uint64_t)g);
    int y0 = (h - c->height) / 2, x0 = (w - c->width) / 2;
    if (c->rand_crop) {
      y0 = (int)draw(&s, h - c->height + 1);
      x0 = (int)draw(&s, w - c->width + 1);
    }
    int mirror = c->mirror || (c->rand_mirror && draw(&s, 2));
    lmx_aug_crop_normalize(src, w, ch, y0, x0, c->height, c->width, mirror, c->mean, c->std,
                           c->scale, data);
  }
  it->codec->release(pix);
  return rc;
}

/* ------------------------------------------------------------ the workers ---- */

static void *worker(void *arg) {
  lmx_imagerec_iter *it = arg;
  const int B = it->cfg.batch_size, K = it->cfg.prefetch_buffer;
  lmx_rio_buf buf = {0};
  unsigned char *tmp = NULL;
  size_t tmpcap = 0;
  char err[ERR_CAP];
  pthread_mutex_lock(&it->mu);
  for (;;) {
    while (!it->stop && (it->next_pos >= it->nbatch * B || it->next_pos / B >= it->consumed + K))
      pthread_cond_wait(&it->work, &it->mu);
    if (it->stop) break;
    int64_t g = it->next_pos++;
    uint64_t epoch = it->epoch;
    slot *s = &it->slots[(g / B) % K];
    float *data = s->data + (size_t)(g % B) * it->sample_elems;
    float *label = s->label + (size_t)(g % B) * (size_t)it->cfg.label_width;
    pthread_mutex_unlock(&it->mu);
    int rc = process(it, g, epoch, &buf, &tmp, &tmpcap, data, label, err);
    pthread_mutex_lock(&it->mu);
    if (rc && !s->failed) {
      s->failed = 1;
      memcpy(s->err, err, sizeof err);
    }
    if (++s->done == B) pthread_cond_broadcast(&it->ready);
  }
  pthread_mutex_unlock(&it->mu);
  lmx_rio_buf_free(&buf);
  lmx_free(tmp);
  return NULL;
}

static void stop_workers(lmx_imagerec_iter *it) {
  pthread_mutex_lock(&it->mu);
  it->stop = 1;
  pthread_cond_broadcast(&it->work);
  pthread_mutex_unlock(&it->mu);
  for (int i = 0; i < it->nthreads; i++) pthread_join(it->threads[i], NULL);
  it->nthreads = 0;
}

static int start_workers(lmx_imagerec_iter *it) {
  shuffle_epoch(it);
  it->stop = 0;
  it->next_pos = it->consumed = 0;
  for (int k = 0; k < it->cfg.prefetch_buffer; k++) it->slots[k].done = it->slots[k].failed = 0;
  for (int i = 0; i < it->cfg.preprocess_threads; i++) {
    int e = pthread_create(&it->threads[i], NULL, worker, it);
    if (e) {
      stop_workers(it);
      return lmx_fail(LMX_ERR_INTERNAL, "ImageRecordIter: cannot start worker thread %d: %s", i,
                      strerror(e));
    }
    it->nthreads = i + 1;
  }
  return LMX_OK;
}

/* ------------------------------------------------------------ the index ---- */

static int push_offset(uint64_t **v, int64_t *n, int64_t *cap, uint64_t off) {
  if (*n == *cap) {
    int64_t nc = *cap ? *cap * 2 : 1024;
    uint64_t *p = lmx_realloc(*v, (size_t)nc * sizeof *p);
    if (!p) return lmx_fail_nomem("ImageRecordIter record offsets", (size_t)nc * sizeof *p);
    *v = p, *cap = nc;
  }
  (*v)[(*n)++] = off;
  return LMX_OK;
}

static int read_index(const char *idx, uint64_t fsize, uint64_t **v, int64_t *n) {
  FILE *f = fopen(idx, "r");
  if (!f) return lmx_fail(LMX_ERR_IO, "ImageRecordIter: cannot open path_imgidx %s: %s", idx,
                          strerror(errno));
  char line[256];
  int64_t cap = 0;
  int rc = LMX_OK;
  for (long lineno = 1; rc == LMX_OK && fgets(line, sizeof line, f); lineno++) {
    char *tab = strchr(line, '\t'), *end;
    if (line[0] == '\n' || line[0] == 0) continue;
    unsigned long long pos = tab ? strtoull(tab + 1, &end, 10) : 0;
    if (!tab || end == tab + 1 || (*end != '\n' && *end != 0 && *end != '\r'))
      rc = lmx_fail(LMX_ERR_FORMAT, "ImageRecordIter: %s line %ld: expected 'key<TAB>offset'", idx,
                    lineno);
    else if (pos >= fsize || pos % 4)
      rc = lmx_fail(LMX_ERR_FORMAT,
                    "ImageRecordIter: %s line %ld: offset %llu is not a record start in the .rec "
                    "(size %llu)",
                    idx, lineno, pos, (unsigned long long)fsize);
    else
      rc = push_offset(v, n, &cap, pos);
  }
  fclose(f);
  return rc;
}

static int scan_rec(lmx_imagerec_iter *it, uint64_t **v, int64_t *n) {
  lmx_rio_buf buf = {0};
  int64_t cap = 0;
  uint64_t off = 0, next;
  int got, rc = LMX_OK;
  while (rc == LMX_OK) {
    rc = lmx_rio_read_at(it->fd, it->rec_path, it->fsize, off, &buf, &next, &got);
    if (rc != LMX_OK || !got) break;
    rc = push_offset(v, n, &cap, off);
    off = next;
  }
  lmx_rio_buf_free(&buf);
  return rc == LMX_OK ? LMX_OK : lmx_fail_prefix(rc, "ImageRecordIter: ");
}

/* ------------------------------------------------------------ the API ---- */

static int check_config(const lmx_imagerec_config *c) {
#define BAD(...) return lmx_fail(LMX_ERR_ARG, "ImageRecordIter: " __VA_ARGS__)
  if (!c->path_imgrec || !c->path_imgrec[0]) BAD("path_imgrec is required");
  if (c->channels != 1 && c->channels != 3)
    BAD("data_shape must have 1 or 3 channels, got %d", c->channels);
  if (c->height < 1 || c->width < 1)
    BAD("data_shape height and width must be >= 1, got %dx%d", c->height, c->width);
  if (c->batch_size < 1) BAD("batch_size must be >= 1, got %d", c->batch_size);
  if (c->label_width < 1) BAD("label_width must be >= 1, got %d", c->label_width);
  if (c->num_parts < 1 || c->part_index < 0 || c->part_index >= c->num_parts)
    BAD("expected num_parts >= 1 and 0 <= part_index < num_parts, got num_parts=%d part_index=%d",
        c->num_parts, c->part_index);
  if (c->preprocess_threads < 1 || c->preprocess_threads > 256)
    BAD("preprocess_threads must be in 1..256, got %d", c->preprocess_threads);
  if (c->prefetch_buffer < 1 || c->prefetch_buffer > 1024)
    BAD("prefetch_buffer must be in 1..1024, got %d", c->prefetch_buffer);
  if (c->last_batch < LMX_LAST_BATCH_ROUND || c->last_batch > LMX_LAST_BATCH_DISCARD)
    BAD("last_batch must be 0 (round), 1 (pad) or 2 (discard), got %d", c->last_batch);
  for (int k = 0; k < c->channels; k++)
    if (!(c->std[k] > 0)) BAD("std of channel %d must be > 0, got %g", k, (double)c->std[k]);
  if (c->resize < 0) BAD("resize must be > 0 (or 0 for none), got %d", c->resize);
#undef BAD
  return LMX_OK;
}

static void destroy(lmx_imagerec_iter *it) {
  if (it->slots)
    for (int k = 0; k < it->cfg.prefetch_buffer; k++) {
      lmx_free(it->slots[k].data);
      lmx_free(it->slots[k].label);
    }
  lmx_free(it->slots);
  lmx_free(it->threads);
  lmx_free(it->order);
  lmx_free(it->offsets);
  if (it->fd >= 0) close(it->fd);
  lmx_free(it->rec_path);
  pthread_mutex_destroy(&it->mu);
  pthread_cond_destroy(&it->work);
  pthread_cond_destroy(&it->ready);
  lmx_free(it);
}

static int init(lmx_imagerec_iter *it) {
  const lmx_imagerec_config *c = &it->cfg;
  LMX_TRY(lmx_image_codec("ImageRecordIter", &it->codec));
  it->fd = open(c->path_imgrec, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (it->fd < 0 || fstat(it->fd, &st) != 0)
    return lmx_fail(LMX_ERR_IO, "ImageRecordIter: cannot open path_imgrec %s: %s", c->path_imgrec,
                    strerror(errno));
  it->fsize = (uint64_t)st.st_size;
  uint64_t *all = NULL;
  int64_t n = 0;
  int rc = c->path_imgidx && c->path_imgidx[0] ? read_index(c->path_imgidx, it->fsize, &all, &n)
                                               : scan_rec(it, &all, &n);
  if (rc != LMX_OK) {
    lmx_free(all);
    return rc;
  }
  int64_t lo = n * c->part_index / c->num_parts, hi = n * (c->part_index + 1) / c->num_parts;
  it->n = hi - lo;
  if (it->n == 0) {
    lmx_free(all);
    return lmx_fail(LMX_ERR_ARG, "ImageRecordIter: part %d of %d of %s holds no records (%lld in all)",
                    c->part_index, c->num_parts, c->path_imgrec, (long long)n);
  }
  memmove(all, all + lo, (size_t)it->n * sizeof *all);
  it->offsets = all;
  it->nbatch = c->last_batch == LMX_LAST_BATCH_DISCARD ? it->n / c->batch_size
                                                       : (it->n + c->batch_size - 1) / c->batch_size;
  it->sample_elems = (size_t)c->channels * (size_t)c->height * (size_t)c->width;
  it->order = lmx_alloc((size_t)it->n * sizeof *it->order);
  it->threads = lmx_calloc((size_t)c->preprocess_threads, sizeof *it->threads);
  it->slots = lmx_calloc((size_t)c->prefetch_buffer, sizeof *it->slots);
  if (!it->order || !it->threads || !it->slots) return lmx_fail_nomem("ImageRecordIter", 0);
  size_t B = (size_t)c->batch_size;
  for (int k = 0; k < c->prefetch_buffer; k++) {
    it->slots[k].data = lmx_alloc(B * it->sample_elems * sizeof(float));
    it->slots[k].label = lmx_alloc(B * (size_t)c->label_width * sizeof(float));
    if (!it->slots[k].data || !it->slots[k].label)
      return lmx_fail_nomem("ImageRecordIter batch buffers", B * it->sample_elems * sizeof(float));
  }
  return start_workers(it);
}

int lmx_imagerec_iter_new(const lmx_imagerec_config *cfg, lmx_imagerec_iter **out) {
  LMX_ENTER();
  LMX_NEED(cfg, "lmx_imagerec_iter_new", "cfg");
  LMX_NEED(out, "lmx_imagerec_iter_new", "out");
  LMX_TRY(check_config(cfg));
  lmx_imagerec_iter *it = lmx_calloc(1, sizeof *it);
  if (!it) return lmx_fail_nomem("ImageRecordIter", sizeof *it);
  it->cfg = *cfg;
  it->fd = -1;
  pthread_mutex_init(&it->mu, NULL);
  pthread_cond_init(&it->work, NULL);
  pthread_cond_init(&it->ready, NULL);
  it->rec_path = lmx_strdup(cfg->path_imgrec);
  it->cfg.path_imgrec = it->rec_path;
  it->cfg.path_imgidx = NULL; /* used at creation only */
  int rc = it->rec_path ? init(it) : lmx_fail_nomem("ImageRecordIter path", 0);
  if (rc != LMX_OK) {
    destroy(it);
    return rc;
  }
  *out = it;
  return LMX_OK;
}

int lmx_imagerec_iter_free(lmx_imagerec_iter *it) {
  if (!it) return LMX_OK;
  stop_workers(it);
  destroy(it);
  return LMX_OK;
}

int lmx_imagerec_iter_size(const lmx_imagerec_iter *it, int64_t *records, int64_t *batches) {
  LMX_ENTER();
  LMX_NEED(it, "lmx_imagerec_iter_size", "it");
  if (records) *records = it->n;
  if (batches) *batches = it->nbatch;
  return LMX_OK;
}

int lmx_imagerec_iter_next(lmx_imagerec_iter *it, float *data, float *label, int *pad, int *got) {
  LMX_ENTER();
  LMX_NEED(it, "lmx_imagerec_iter_next", "it");
  LMX_NEED(data, "lmx_imagerec_iter_next", "data");
  LMX_NEED(label, "lmx_imagerec_iter_next", "label");
  LMX_NEED(pad, "lmx_imagerec_iter_next", "pad");
  LMX_NEED(got, "lmx_imagerec_iter_next", "got");
  const int B = it->cfg.batch_size;
  pthread_mutex_lock(&it->mu);
  int64_t b = it->consumed;
  if (b >= it->nbatch) {
    pthread_mutex_unlock(&it->mu);
    *got = 0;
    return LMX_OK;
  }
  if (it->nthreads == 0) { /* a reset() that failed to start them: waiting would hang */
    pthread_mutex_unlock(&it->mu);
    *got = 0;
    return lmx_fail(LMX_ERR_STATE, "ImageRecordIter: next: no worker thread is running (the "
                    "last reset() failed to start them); call reset() again");
  }
  slot *s = &it->slots[b % it->cfg.prefetch_buffer];
  while (s->done < B) pthread_cond_wait(&it->ready, &it->mu);
  int rc = LMX_OK;
  if (s->failed) rc = lmx_fail(LMX_ERR_FORMAT, "%s", s->err);
  else {
    memcpy(data, s->data, (size_t)B * it->sample_elems * sizeof(float));
    memcpy(label, s->label, (size_t)B * (size_t)it->cfg.label_width * sizeof(float));
    int64_t end = (b + 1) * B;
    *pad = end > it->n ? (int)(end - it->n) : 0;
    *got = 1;
  }
  s->done = s->failed = 0;
  it->consumed++;
  pthread_cond_broadcast(&it->work);
  pthread_mutex_unlock(&it->mu);
  return rc;
}

int lmx_imagerec_iter_reset(lmx_imagerec_iter *it) {
  LMX_ENTER();
  LMX_NEED(it, "lmx_imagerec_iter_reset", "it");
  stop_workers(it);
  it->epoch++;
  return start_workers(it);
}

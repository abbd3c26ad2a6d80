/* atomic_file.c — temporary + fsync + rename writers, and the removal of temporaries
 * left by killed processes (see atomic_file.h for the contract). */
#define _GNU_SOURCE /* dirfd, unlinkat under -std=c11 */
#include "atomic_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "alloc.h"
#include "status.h"

static atomic_ullong g_counter;

static int ferr(const lmx_atomic_file *f, const char *what) {
  return lmx_fail(LMX_ERR_IO, "%s: %s temporary file %s: %s", f->path, what, f->tmp,
                  strerror(errno));
}

/* Splits path into a directory (".", "/" or a copy of the part before the last '/') and
 * the base name (borrowed from path). *dir is allocated; NULL on failure. */
static char *split_dir(const char *path, const char **base) {
  const char *slash = strrchr(path, '/');
  *base = slash ? slash + 1 : path;
  if (!slash) return lmx_strdup(".");
  if (slash == path) return lmx_strdup("/");
  return lmx_strndup(path, (size_t)(slash - path));
}

/* Parses `.tmp.<pid>.<n>` at *p (pid > 0, both all digits); advances *p past it. */
static int parse_group(const char **p, long *pid) {
  const char *q = *p;
  if (strncmp(q, ".tmp.", 5) != 0) return 0;
  q += 5;
  if (*q < '0' || *q > '9') return 0;
  char *end;
  errno = 0;
  long v = strtol(q, &end, 10);
  if (errno || *end != '.' || v <= 0) return 0;
  q = end + 1;
  if (*q < '0' || *q > '9') return 0;
  while (*q >= '0' && *q <= '9') q++;
  *pid = v;
  *p = q;
  return 1;
}

/* A pid is gone only when kill says so; EPERM means alive (another user's process). */
static int pid_gone(long pid) {
  if (pid == (long)getpid()) return 0;
  return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* Whether name is a temporary of base: `<base>.tmp.<pid>.<n>`, or a temporary of such a
 * temporary (`<base>.tmp.<pid>.<n>.tmp.<pid>.<n>`..., left when a staging file that is
 * itself written atomically is killed), all of whose processes are gone. */
static int stale_tmp(const char *name, const char *base, size_t blen) {
  if (strncmp(name, base, blen) != 0) return 0;
  const char *p = name + blen;
  int groups = 0;
  while (*p) {
    long pid;
    if (!parse_group(&p, &pid) || !pid_gone(pid)) return 0;
    groups++;
  }
  return groups > 0;
}

int lmx_atomic_clean_stale(const char *path, int *removed) {
  if (removed) *removed = 0;
  const char *base;
  char *dir = split_dir(path, &base);
  if (!dir) return lmx_fail_prefix(lmx_fail_nomem("a directory name", strlen(path) + 1), "%s: ", path);
  DIR *d = opendir(dir);
  if (!d) {
    lmx_free(dir);
    return LMX_OK;
  }
  size_t blen = strlen(base);
  int dfd = dirfd(d);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (!stale_tmp(e->d_name, base, blen)) continue;
    if (unlinkat(dfd, e->d_name, 0) == 0 && removed) (*removed)++;
  }
  closedir(d);
  lmx_free(dir);
  return LMX_OK;
}

int lmx_atomic_begin(lmx_atomic_file *f, const char *path) {
  f->fd = -1;
  f->path = path;
  f->tmp = NULL;
  LMX_TRY(lmx_atomic_clean_stale(path, NULL));
  size_t cap = strlen(path) + 64;
  f->tmp = lmx_alloc(cap);
  if (!f->tmp) return lmx_fail_prefix(lmx_fail_nomem("the temporary file name", cap), "%s: ", path);
  snprintf(f->tmp, cap, "%s.tmp.%ld.%llu", path, (long)getpid(),
           (unsigned long long)atomic_fetch_add(&g_counter, 1));
  f->fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (f->fd < 0) {
    int rc = ferr(f, "cannot create");
    lmx_free(f->tmp);
    f->tmp = NULL;
    return rc;
  }
  return LMX_OK;
}

int lmx_atomic_write(lmx_atomic_file *f, const void *data, size_t n) {
  const unsigned char *p = data;
  while (n > 0) {
    ssize_t k = write(f->fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return ferr(f, "cannot write");
    p += k;
    n -= (size_t)k;
  }
  return LMX_OK;
}

/* Best effort: makes the rename durable. */
static void sync_dir(const char *path) {
  const char *base;
  char *dir = split_dir(path, &base);
  if (!dir) return;
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
  lmx_free(dir);
}

void lmx_atomic_abort(lmx_atomic_file *f) {
  if (f->fd >= 0) close(f->fd);
  if (f->tmp) unlink(f->tmp);
  lmx_free(f->tmp);
  f->fd = -1;
  f->tmp = NULL;
}

int lmx_atomic_commit(lmx_atomic_file *f) {
  int rc = LMX_OK;
  if (fsync(f->fd) != 0) rc = ferr(f, "cannot sync");
  if (close(f->fd) != 0 && rc == LMX_OK) rc = ferr(f, "cannot close");
  f->fd = -1;
  if (rc == LMX_OK && rename(f->tmp, f->path) != 0)
    rc = lmx_fail(LMX_ERR_IO, "%s: cannot rename temporary file %s over it: %s", f->path,
                  f->tmp, strerror(errno));
  if (rc != LMX_OK) {
    lmx_atomic_abort(f);
    return rc;
  }
  sync_dir(f->path);
  lmx_free(f->tmp);
  f->tmp = NULL;
  return LMX_OK;
}

int lmx_atomic_write_file(const char *path, const void *data, size_t n) {
  lmx_atomic_file f;
  LMX_TRY(lmx_atomic_begin(&f, path));
  int rc = lmx_atomic_write(&f, data, n);
  if (rc != LMX_OK) {
    lmx_atomic_abort(&f);
    return rc;
  }
  return lmx_atomic_commit(&f);
}

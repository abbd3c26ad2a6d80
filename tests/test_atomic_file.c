/* test_atomic_file.c — src/core/atomic_file.c: whole files or nothing, temporaries
 * removed on every failure (allocation failures injected one by one, a failed rename),
 * and the removal of stale temporaries: a dead process's only, by exact name. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "core/atomic_file.h"
#include "luamx.h"

static char g_dir[] = "lmx_atomic_XXXXXX"; /* in the working directory (ctest: the build) */

static void path_of(char *buf, size_t cap, const char *name) {
  snprintf(buf, cap, "%s/%s", g_dir, name);
}

static void put(const char *name, const char *text) {
  char p[256];
  path_of(p, sizeof p, name);
  FILE *f = fopen(p, "wb");
  if (f) {
    fputs(text, f);
    fclose(f);
  }
}

static int has(const char *name) {
  char p[256];
  struct stat st;
  path_of(p, sizeof p, name);
  return stat(p, &st) == 0;
}

static int count_entries(void) {
  DIR *d = opendir(g_dir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  if (d) closedir(d);
  return n;
}

static void slurp(const char *name, char *buf, size_t cap) {
  char p[256];
  path_of(p, sizeof p, name);
  buf[0] = '\0';
  FILE *f = fopen(p, "rb");
  if (!f) return;
  size_t n = fread(buf, 1, cap - 1, f);
  buf[n] = '\0';
  fclose(f);
}

static long dead_pid(void) {
  for (long pid = 4000000; pid > 3000000; pid--)
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) return pid;
  return -1;
}

static int64_t live_blocks(void) {
  int64_t n = 0;
  lmx_debug_alloc_stats(&n, NULL, NULL);
  return n;
}

static void test_write_and_abort(void) {
  char p[256], buf[64];
  path_of(p, sizeof p, "a.bin");
  CHECK(lmx_atomic_write_file(p, "hello", 5) == LMX_OK);
  slurp("a.bin", buf, sizeof buf);
  CHECK(strcmp(buf, "hello") == 0, "got '%s'", buf);
  CHECK(count_entries() == 1);
  lmx_atomic_file f;
  CHECK(lmx_atomic_begin(&f, p) == LMX_OK);
  CHECK(lmx_atomic_write(&f, "other", 5) == LMX_OK);
  CHECK(count_entries() == 2); /* the temporary exists while writing */
  lmx_atomic_abort(&f);
  lmx_atomic_abort(&f); /* twice is harmless */
  slurp("a.bin", buf, sizeof buf);
  CHECK(strcmp(buf, "hello") == 0);
  CHECK(count_entries() == 1);
}

/* Every allocation of a write fails in turn: an error, the old file, no temporary, no leak. */
static void test_fault_injection(void) {
  char p[256], buf[64];
  path_of(p, sizeof p, "a.bin");
  int failures = 0;
  for (int n = 1; n < 20; n++) {
    int64_t before = live_blocks();
    lmx_debug_alloc_fail_at(n);
    int rc = lmx_atomic_write_file(p, "new!!", 5);
    lmx_debug_alloc_fail_at(0);
    CHECK(live_blocks() == before, "allocation %d: a leak", n);
    CHECK(count_entries() == 1, "allocation %d: a temporary was left", n);
    slurp("a.bin", buf, sizeof buf);
    if (rc == LMX_OK) {
      CHECK(strcmp(buf, "new!!") == 0);
      break;
    }
    failures++;
    CHECK(rc == LMX_ERR_NOMEM, "allocation %d: rc %d", n, rc);
    CHECK(strcmp(buf, "hello") == 0, "allocation %d: the old file changed", n);
    CHECK(strstr(lmx_last_error(), p) != NULL, "message: %s", lmx_last_error());
  }
  CHECK(failures >= 2, "only %d allocation(s) failed", failures);
}

static void test_rename_failure(void) {
  char p[256];
  path_of(p, sizeof p, "dir");
  CHECK(mkdir(p, 0777) == 0);
  int before = count_entries();
  CHECK(lmx_atomic_write_file(p, "x", 1) == LMX_ERR_IO);
  CHECK(strstr(lmx_last_error(), "cannot rename temporary file") != NULL, "%s", lmx_last_error());
  CHECK(count_entries() == before);
  rmdir(p);
}

static void test_clean_stale(void) {
  long dead = dead_pid();
  CHECK(dead > 0);
  char n1[64], n2[64], n3[64], n4[64], n5[64], n6[64], n7[96], n8[96];
  snprintf(n1, sizeof n1, "t.params.tmp.%ld.0", dead);                /* stale */
  snprintf(n2, sizeof n2, "t.params.tmp.%ld.7", (long)getpid());     /* live: this process */
  snprintf(n3, sizeof n3, "t.params.tmp.1.3");                       /* live: pid 1 */
  snprintf(n4, sizeof n4, "st.params.tmp.%ld.0", dead);              /* another target */
  snprintf(n5, sizeof n5, "t.params.tmp.%ld.0.x", dead);             /* not a temporary */
  snprintf(n6, sizeof n6, "t.params.tmp.-%ld.0", dead);              /* not a temporary */
  snprintf(n7, sizeof n7, "t.params.tmp.%ld.5.tmp.%ld.0", dead, dead);   /* nested: stale */
  snprintf(n8, sizeof n8, "t.params.tmp.%ld.5.tmp.%ld.0", dead, (long)getpid()); /* nested, live */
  const char *names[] = {n1, n2, n3, n4, n5, n6, n7, n8};
  for (int i = 0; i < 8; i++) put(names[i], "partial");
  char p[256];
  path_of(p, sizeof p, "t.params");
  int removed = -1;
  CHECK(lmx_atomic_clean_stale(p, &removed) == LMX_OK);
  CHECK(removed == 2, "removed %d", removed);
  CHECK(!has(n1));
  CHECK(!has(n7));
  for (int i = 1; i < 6; i++) CHECK(has(names[i]), "%s was removed", names[i]);
  CHECK(has(n8));
  /* a save of the target cleans too */
  put(n1, "partial");
  CHECK(lmx_atomic_write_file(p, "ok", 2) == LMX_OK);
  CHECK(!has(n1));
  CHECK(lmx_atomic_clean_stale("/nonexistent-dir/x", &removed) == LMX_OK && removed == 0);
  CHECK(lmx_atomic_clean_stale("relative-name-here", NULL) == LMX_OK);
}

int main(void) {
  if (!mkdtemp(g_dir)) {
    perror("mkdtemp");
    return 1;
  }
  test_write_and_abort();
  test_fault_injection();
  test_rename_failure();
  test_clean_stale();
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
  return check_summary();
}

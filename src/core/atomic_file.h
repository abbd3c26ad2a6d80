/* atomic_file.h — files that appear complete or not at all (temporary + fsync + rename).
 *
 * A writer creates `<path>.tmp.<pid>.<n>` in the target's directory (O_EXCL; n is a
 * process-wide counter), the caller writes it, and commit fsyncs and closes it, renames
 * it over path and fsyncs the directory, so after a crash at any instant path holds the
 * old file or the new one, whole. Abort (and any failed commit) removes the temporary.
 *
 * A process killed mid-write leaves its temporary behind. Every begin first removes the
 * temporaries of the same target whose process is gone (kill(pid, 0) says ESRCH): a
 * temporary whose pid is alive is never touched, whoever owns it, and a name that does
 * not parse exactly as `<base>.tmp.<digits>.<digits>` (or, for a temporary of such a
 * temporary, `<base>` followed by several `.tmp.<digits>.<digits>` groups, all of dead
 * processes) is not a temporary of this target.
 * Readers never look at temporaries: they open path only.
 *
 * Messages name path and the temporary. Not thread-safe per writer; writers of
 * different paths (or the same path, whose temporaries differ by n) may run in parallel.
 */
#ifndef LMX_CORE_ATOMIC_FILE_H
#define LMX_CORE_ATOMIC_FILE_H

#include <stddef.h>

typedef struct {
  int fd;           /* the open temporary, or -1 */
  const char *path; /* the target (borrowed) */
  char *tmp;        /* the temporary's name (engine allocator) */
} lmx_atomic_file;

/* Removes stale temporaries of path, then creates a fresh one. On failure nothing is
 * left open or allocated. */
int lmx_atomic_begin(lmx_atomic_file *f, const char *path);

/* Writes all n bytes (retrying short writes and EINTR). */
int lmx_atomic_write(lmx_atomic_file *f, const void *data, size_t n);

/* fsync + close + rename over path + fsync of the directory; frees f's resources
 * whatever happens and removes the temporary on failure. */
int lmx_atomic_commit(lmx_atomic_file *f);

/* Closes and removes the temporary, frees f's resources. Safe after a failed begin. */
void lmx_atomic_abort(lmx_atomic_file *f);

/* Removes the temporaries of path left by processes that no longer exist; *removed
 * (may be NULL) counts them. A directory that cannot be read is not an error (there is
 * nothing this process could remove). */
int lmx_atomic_clean_stale(const char *path, int *removed);

/* Writes a whole buffer atomically (begin + write + commit). */
int lmx_atomic_write_file(const char *path, const void *data, size_t n);

#endif

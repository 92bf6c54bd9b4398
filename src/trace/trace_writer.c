/* trace_writer.c: record encoding and the chunk writer (docs/trace-format.md).
 *
 * dnp_rec_encode() is on the agent's per-event path: no allocation, no locks,
 * one pass over the values, and nothing moved after it is written. dnp_writer_append() assembles a chunk header on the stack
 * and writes it with its payload in one writev(2) loop under the writer's mutex. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "trace_writer.h"

struct dnp_writer {
    int fd;
    int regular;                 /* a regular file: a torn chunk can be cut off */
    pthread_mutex_t lock;
    atomic_int error;            /* errno of the first failure, sticky */
    atomic_uint_least64_t bytes; /* written, header included */
};

/* Bytes of v as a varint: 1 + (bit length - 1) / 7, without a loop. */
static inline size_t varint_len(uint64_t v) {
    unsigned bits = 64u - (unsigned)__builtin_clzll(v | 1);
    return (bits + 6) / 7;
}

size_t dnp_rec_encode(uint8_t *out, uint8_t tag, const uint64_t *vals, unsigned n,
                      const void *tail, size_t tail_len) {
    if (n > 2 + DNP_MAX_VALUES)
        return 0;
    out[0] = tag;
    uint8_t *p;
    if (tail_len <= 127 - DNP_VARINT_MAX * n) {
        /* The body is under 128 bytes whatever the values: its size is one byte,
         * known after the values are written. Every event takes this path. */
        p = out + 2;
        for (unsigned i = 0; i < n; i++)
            p = dnp_varint_put(p, vals[i]);
        if (tail_len) {
            memcpy(p, tail, tail_len);
            p += tail_len;
        }
        out[1] = (uint8_t)(p - out - 2);
        return (size_t)(p - out);
    }
    size_t body = tail_len;
    for (unsigned i = 0; i < n; i++)
        body += varint_len(vals[i]);
    p = dnp_varint_put(out + 1, body);
    for (unsigned i = 0; i < n; i++)
        p = dnp_varint_put(p, vals[i]);
    memcpy(p, tail, tail_len);
    return (size_t)(p + tail_len - out);
}

/* Writes every byte of iov[0..cnt), retrying on EINTR and short writes.
 * Returns 0 or a negative errno. iov is consumed. */
static int write_all(int fd, struct iovec *iov, int cnt) {
    while (cnt > 0) {
        ssize_t n = writev(fd, iov, cnt);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (n == 0)
            return -EIO;
        size_t done = (size_t)n;
        while (cnt > 0 && done >= iov->iov_len) {
            done -= iov->iov_len;
            iov++;
            cnt--;
        }
        if (cnt > 0) {
            iov->iov_base = (uint8_t *)iov->iov_base + done;
            iov->iov_len -= done;
        }
    }
    return 0;
}

/* Creates the trace file, never writing through a symbolic link: a link at path
 * (planted in a shared directory such as /tmp, say) is replaced, as `dnprof run`
 * replaces it, by a new file written beside it and renamed over it. The file is
 * created 0600 (the umask may narrow it, never widen). exclusive: path must not
 * exist, whatever it is. A device or a pipe is opened as it is (/dev/null).
 * Returns the fd, or -1 with errno. */
int dnp_file_create(const char *path, int exclusive) {
    const int mode = S_IRUSR | S_IWUSR;
    int fd;
    if (exclusive) {
        do
            fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, mode);
        while (fd < 0 && errno == EINTR);
        return fd;
    }
    struct stat st;
    int exists = lstat(path, &st) == 0;
    if (exists && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
        do
            fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
        while (fd < 0 && errno == EINTR);
        return fd;
    }
    size_t len = strlen(path);
    char *tmp = malloc(len + 32);
    if (!tmp) {
        errno = ENOMEM;
        return -1;
    }
    static atomic_uint serial;
    fd = -1;
    for (int i = 0; i < 100 && fd < 0; i++) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        snprintf(tmp, len + 32, "%s.%d.%x%05lx", path, (int)getpid(), atomic_fetch_add(&serial, 1) & 0xfff,
                 (unsigned long)(now.tv_nsec & 0xfffff));
        fd = open(tmp, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, mode);
        if (fd < 0 && errno != EEXIST && errno != EINTR)
            break;
    }
    if (fd >= 0) {
        if (rename(tmp, path) == 0) {
            free(tmp);
            return fd;
        }
        int e = errno;
        unlink(tmp);
        close(fd);
        free(tmp);
        errno = e;
        return -1;
    }
    int e = errno;
    free(tmp);
    if ((e == EACCES || e == EPERM || e == EROFS) && exists && S_ISREG(st.st_mode)) {
        /* A directory this user cannot add to, but a file of it that can be
         * rewritten: rewritten in place, never through a link. */
        do
            fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
        while (fd < 0 && errno == EINTR);
        return fd;
    }
    if (exists && S_ISLNK(st.st_mode))
        e = ELOOP;
    errno = e;
    return -1;
}

dnp_writer *dnp_writer_open(const char *path, int exclusive, uint64_t pid, char *err, size_t errlen) {
    int saved = errno;
    if (!path || !*path) {
        if (err && errlen)
            snprintf(err, errlen, "no trace path given");
        return NULL;
    }
    dnp_writer *w = calloc(1, sizeof *w);
    if (!w) {
        if (err && errlen)
            snprintf(err, errlen, "cannot create trace '%s': out of memory", path);
        return NULL;
    }
    int fd = dnp_file_create(path, exclusive);
    if (fd < 0) {
        int e = errno;
        if (err && errlen) {
            if (e == EEXIST)
                snprintf(err, errlen, "cannot create trace '%s': it already exists", path);
            else if (e == ELOOP)
                snprintf(err, errlen,
                         "cannot create trace '%s': it is a symbolic link, which dnprof never writes "
                         "through, in a directory it cannot write to replace it; remove it or choose "
                         "another path", path);
            else
                snprintf(err, errlen, "cannot create trace '%s': %s", path, strerror(e));
        }
        free(w);
        errno = saved;
        return NULL;
    }

    uint8_t hdr[DNP_TRACE_HEADER_SIZE];
    memcpy(hdr, DNP_TRACE_MAGIC, 8);
    hdr[8] = (uint8_t)DNP_TRACE_MAJOR;
    hdr[9] = (uint8_t)(DNP_TRACE_MAJOR >> 8);
    hdr[10] = (uint8_t)DNP_TRACE_MINOR;
    hdr[11] = (uint8_t)(DNP_TRACE_MINOR >> 8);
    dnp_put_u32le(hdr + 12, DNP_TRACE_HEADER_SIZE);
    dnp_put_u64le(hdr + 16, pid);
    dnp_put_u64le(hdr + 24, 0); /* flags: none defined in 1.0 */
    struct iovec iov = {hdr, sizeof hdr};
    int rc = write_all(fd, &iov, 1);
    if (rc < 0) {
        if (err && errlen)
            snprintf(err, errlen, "cannot write trace '%s': %s", path, strerror(-rc));
        struct stat st;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
            unlink(path); /* a file without a header helps no one; never a device */
        close(fd);
        free(w);
        errno = saved;
        return NULL;
    }
    struct stat st;
    w->fd = fd;
    w->regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    pthread_mutex_init(&w->lock, NULL);
    atomic_init(&w->error, 0);
    atomic_init(&w->bytes, DNP_TRACE_HEADER_SIZE);
    errno = saved;
    return w;
}

int dnp_writer_append(dnp_writer *w, uint32_t thread, uint64_t base_ns, const uint8_t *payload,
                      size_t len) {
    if (!w || (len && !payload))
        return -EINVAL;
    int e = atomic_load_explicit(&w->error, memory_order_relaxed);
    if (e)
        return -e;
    if (len > DNP_CHUNK_MAX_PAYLOAD)
        return -EMSGSIZE; /* the caller's mistake: the writer stays usable */

    uint8_t hdr[DNP_CHUNK_HEADER_SIZE];
    dnp_put_u32le(hdr, DNP_CHUNK_MAGIC);
    dnp_put_u32le(hdr + 4, (uint32_t)len);
    dnp_put_u32le(hdr + 8, dnp_crc32(payload, len));
    dnp_put_u32le(hdr + 12, thread);
    dnp_put_u64le(hdr + 16, base_ns);
    struct iovec iov[2] = {{hdr, sizeof hdr}, {(void *)payload, len}};

    int saved = errno; /* the agent runs on the application's threads */
    pthread_mutex_lock(&w->lock);
    e = atomic_load_explicit(&w->error, memory_order_relaxed);
    int rc = -e;
    if (!e) {
        rc = write_all(w->fd, iov, 2);
        if (rc < 0) {
            atomic_store(&w->error, -rc);
            /* The chunk may be torn (a disk that filled in the middle): the file
             * ends with the last whole chunk, so that a reader sees where the
             * recording stopped, not a killed process. */
            if (w->regular) {
                int t = ftruncate(w->fd, (off_t)atomic_load(&w->bytes));
                (void)t;
            }
        }
        else
            atomic_fetch_add(&w->bytes, (uint64_t)(sizeof hdr + len));
    }
    pthread_mutex_unlock(&w->lock);
    errno = saved;
    return rc;
}

int dnp_writer_error(const dnp_writer *w) {
    return w ? atomic_load(&((dnp_writer *)w)->error) : EINVAL;
}

uint64_t dnp_writer_bytes(const dnp_writer *w) {
    return w ? atomic_load(&((dnp_writer *)w)->bytes) : 0;
}

void dnp_writer_free(dnp_writer *w) {
    if (!w)
        return;
    int saved = errno;
    close(w->fd);
    pthread_mutex_destroy(&w->lock);
    free(w);
    errno = saved;
}

/*
 * The walk's hot loop in C: every file of a folder lstat'ed and compared with
 * its stat-cache record on the packed bytes (``PackedFolder.all_match``).
 *
 * Optional: ``setup.py`` builds it where a C compiler is found, and
 * ``packedfolder`` falls back to the same loop in Python where it is missing.
 * The two must give the same answer for every input: see that method's
 * docstring, which this mirrors, and tests/test_statmatch.py, which compares
 * them. Why C at all: a no-change walk of 100,000 files made 100,000 calls of
 * ``os.stat`` from Python, each building a result object of 20 fields that the
 * loop packed again to compare: 2.3 us a file, against 1.1 us here
 * (benchmarks/bench_statloop.py).
 *
 * Nothing here keeps a Python object across the loop, so the GIL is released
 * while it runs.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#ifdef __APPLE__
#define MTIME st_mtimespec
#define CTIME st_ctimespec
#else
#define MTIME st_mtim
#define CTIME st_ctim
#endif

/* A record as saved (packedfolder.RECORD, "<IQqqQ20s"): st_mode, size,
 * mtime_ns, ctime_ns, inode, blob id; the comparison reads the first 36 bytes. */
#define RECORD_SIZE 56
#define KEY_SIZE 36

static uint64_t read_le(const unsigned char *at, int bytes) {
    uint64_t value = 0;
    for (int i = bytes - 1; i >= 0; i--) {
        value = (value << 8) | at[i];
    }
    return value;
}

/* Nanoseconds as Python's st_*_ns gives them; 0 where they do not fit in an
 * int64 (Python's struct.pack would fail there: the file does not match). */
static int to_ns(struct timespec t, int64_t *out) {
    const int64_t billion = 1000000000;
    if (t.tv_sec > (INT64_MAX - t.tv_nsec) / billion || t.tv_sec < (INT64_MIN + billion) / billion) {
        return 0;
    }
    *out = (int64_t)t.tv_sec * billion + t.tv_nsec;
    return 1;
}

/* Whether ``st`` matches the record at ``key`` and its mtime is below ``cutoff``. */
static int matches(const struct stat *st, const unsigned char *key, int64_t cutoff) {
    int64_t mtime, ctime;
    if (!to_ns(st->MTIME, &mtime) || !to_ns(st->CTIME, &ctime) || mtime >= cutoff) {
        return 0;
    }
    return (uint64_t)(uint32_t)st->st_mode == read_le(key, 4) && (uint64_t)st->st_size == read_le(key + 4, 8) &&
           (uint64_t)mtime == read_le(key + 12, 8) && (uint64_t)ctime == read_le(key + 20, 8) &&
           (uint64_t)st->st_ino == read_le(key + 28, 8);
}

static PyObject *all_match(PyObject *module, PyObject *args) {
    (void)module;
    Py_buffer body;
    Py_ssize_t names_at, names_end, records_at, count;
    int fd;
    long long cutoff;
    if (!PyArg_ParseTuple(args, "y*nnnniL:all_match", &body, &names_at, &names_end, &records_at, &count, &fd,
                          &cutoff)) {
        return NULL;
    }
    if (count == 0) {
        PyBuffer_Release(&body);
        return PyLong_FromLong(0);
    }
    const unsigned char *bytes = body.buf;
    Py_ssize_t length = body.len;
    int found = names_at >= 0 && names_at < names_end && names_end <= length && records_at >= 0;
    unsigned long long total = 0;
    if (found) {
        /* The names are split as Python splits body[names_at:names_end - 1] on NUL:
         * each ends at a NUL, the last at names_end - 1 (a NUL as saved). */
        const char *name = (const char *)bytes + names_at;
        const char *end = (const char *)bytes + names_end - 1;
        Py_ssize_t at = records_at;
        struct stat st;
        Py_BEGIN_ALLOW_THREADS;
        for (;;) {
            const char *stop = memchr(name, '\0', (size_t)(end - name));
            if (stop == NULL) {
                stop = end;
            }
            if ((stop == end && *end != '\0') || length - at < KEY_SIZE ||
                fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !matches(&st, bytes + at, cutoff)) {
                found = 0; /* a last name not ended by a NUL cannot be passed to fstatat as it is */
                break;
            }
            total += (unsigned long long)st.st_size;
            at += RECORD_SIZE;
            if (stop == end) {
                break;
            }
            name = stop + 1;
        }
        Py_END_ALLOW_THREADS;
    }
    PyBuffer_Release(&body);
    if (!found) {
        Py_RETURN_NONE;
    }
    return PyLong_FromUnsignedLongLong(total);
}

static PyMethodDef methods[] = {
    {"all_match", all_match, METH_VARARGS,
     "all_match(body, names_at, names_end, records_at, count, fd, cutoff) -> int | None\n\n"
     "PackedFolder.all_match with os.stat, on the folder open as fd."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_statmatch", "The walk's stat loop in C (see packedfolder.all_match).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__statmatch(void) { return PyModule_Create(&module); }

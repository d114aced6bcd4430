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
#include <unistd.h>
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

/* Whether every file named in bytes[names_at:names_end] matches its record from
 * bytes[records_at:] (see all_match); its total size in *total. Holds no Python
 * object: called with the GIL released. */
static int match_folder(const unsigned char *bytes, Py_ssize_t length, Py_ssize_t names_at, Py_ssize_t names_end,
                        Py_ssize_t records_at, int fd, int64_t cutoff, unsigned long long *total) {
    if (!(names_at >= 0 && names_at < names_end && names_end <= length && records_at >= 0)) {
        return 0;
    }
    /* The names are split as Python splits body[names_at:names_end - 1] on NUL:
     * each ends at a NUL, the last at names_end - 1 (a NUL as saved). */
    const char *name = (const char *)bytes + names_at;
    const char *end = (const char *)bytes + names_end - 1;
    Py_ssize_t at = records_at;
    struct stat st;
    *total = 0;
    for (;;) {
        const char *stop = memchr(name, '\0', (size_t)(end - name));
        if (stop == NULL) {
            stop = end;
        }
        if ((stop == end && *end != '\0') || length - at < KEY_SIZE ||
            fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !matches(&st, bytes + at, cutoff)) {
            return 0; /* a last name not ended by a NUL cannot be passed to fstatat as it is */
        }
        *total += (unsigned long long)st.st_size;
        at += RECORD_SIZE;
        if (stop == end) {
            return 1;
        }
        name = stop + 1;
    }
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
    unsigned long long total = 0;
    int found;
    Py_BEGIN_ALLOW_THREADS;
    found = match_folder(body.buf, body.len, names_at, names_end, records_at, fd, cutoff, &total);
    Py_END_ALLOW_THREADS;
    PyBuffer_Release(&body);
    if (!found) {
        Py_RETURN_NONE;
    }
    return PyLong_FromUnsignedLongLong(total);
}

/* One folder for check_folders: where it is, the stat its shape says, and where
 * its names and records are. */
typedef struct {
    PyObject *path; /* bytes, relative to the root's descriptor: a reference held */
    long long place;
    long long mtime, ctime;
    unsigned long long inode;
    Py_ssize_t body, names_at, names_end, records_at, count;
} Job;

enum { REACHED, STOP, DONE, CONTROL_SLOTS };
#define VERDICT_SLOTS 4

static void release_all(Job *jobs, Py_ssize_t jobs_made, Py_buffer *bodies, Py_ssize_t bodies_held) {
    for (Py_ssize_t i = 0; i < jobs_made; i++) {
        Py_DECREF(jobs[i].path);
    }
    for (Py_ssize_t i = 0; i < bodies_held; i++) {
        PyBuffer_Release(&bodies[i]);
    }
    PyMem_Free(jobs);
    PyMem_Free(bodies);
}

/* check_folders(root_fd, jobs, bodies, cutoff, control, out): the preload's
 * loop (see preloadthread.py), all of it with the GIL released. */
static PyObject *check_folders(PyObject *module, PyObject *args) {
    (void)module;
    int root_fd;
    PyObject *job_list, *body_list;
    long long cutoff;
    Py_buffer control, out;
    if (!PyArg_ParseTuple(args, "iO!O!Lw*w*:check_folders", &root_fd, &PyList_Type, &job_list, &PyList_Type,
                          &body_list, &cutoff, &control, &out)) {
        return NULL;
    }
    Py_ssize_t count = PyList_GET_SIZE(job_list), body_count = PyList_GET_SIZE(body_list);
    Job *jobs = PyMem_Calloc((size_t)count + 1, sizeof(Job));
    Py_buffer *bodies = PyMem_Calloc((size_t)body_count + 1, sizeof(Py_buffer));
    Py_ssize_t made = 0, held = 0;
    if (jobs == NULL || bodies == NULL) {
        release_all(jobs, 0, bodies, 0);
        PyBuffer_Release(&control);
        PyBuffer_Release(&out);
        return PyErr_NoMemory();
    }
    if (control.len < (Py_ssize_t)(CONTROL_SLOTS * sizeof(int64_t)) ||
        out.len < count * (Py_ssize_t)(VERDICT_SLOTS * sizeof(int64_t)) || ((uintptr_t)control.buf % 8) ||
        ((uintptr_t)out.buf % 8)) {
        PyErr_SetString(PyExc_ValueError, "check_folders: control or out too small or not aligned");
        goto fail;
    }
    for (; held < body_count; held++) {
        if (PyObject_GetBuffer(PyList_GET_ITEM(body_list, held), &bodies[held], PyBUF_SIMPLE) != 0) {
            goto fail;
        }
    }
    for (; made < count; made++) {
        Job *job = &jobs[made];
        if (!PyArg_ParseTuple(PyList_GET_ITEM(job_list, made), "O!LLLKnnnnn:check_folders job", &PyBytes_Type,
                              &job->path, &job->place, &job->mtime, &job->ctime, &job->inode, &job->body,
                              &job->names_at, &job->names_end, &job->records_at, &job->count)) {
            goto fail;
        }
        Py_INCREF(job->path);
        if (job->body < 0 || job->body >= body_count) {
            made++;
            PyErr_SetString(PyExc_ValueError, "check_folders: a job names no body");
            goto fail;
        }
    }
    int64_t *ctl = control.buf, *verdicts = out.buf;
    Py_BEGIN_ALLOW_THREADS;
    for (Py_ssize_t i = 0; i < count; i++) {
        const Job *job = &jobs[i];
        if (__atomic_load_n(&ctl[STOP], __ATOMIC_ACQUIRE) || job->place < __atomic_load_n(&ctl[REACHED], __ATOMIC_ACQUIRE)) {
            break; /* stopped, or the walk has come this far itself */
        }
        int64_t total = -1, mtime = 0, ctime = 0;
        uint64_t inode = 0;
        int fd = openat(root_fd, PyBytes_AS_STRING(job->path), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0) {
            struct stat own;
            if (fstat(fd, &own) == 0 && to_ns(own.MTIME, &mtime) && to_ns(own.CTIME, &ctime)) {
                inode = (uint64_t)own.st_ino;
                unsigned long long size = 0;
                if (mtime == job->mtime && ctime == job->ctime && inode == (uint64_t)job->inode && job->count > 0 &&
                    match_folder(bodies[job->body].buf, bodies[job->body].len, job->names_at, job->names_end,
                                 job->records_at, fd, cutoff, &size) &&
                    size <= (unsigned long long)INT64_MAX) {
                    total = (int64_t)size;
                }
            } else {
                mtime = ctime = 0;
                inode = 0;
            }
            close(fd);
        }
        int64_t *verdict = &verdicts[i * VERDICT_SLOTS];
        verdict[0] = total;
        verdict[1] = mtime;
        verdict[2] = ctime;
        verdict[3] = (int64_t)inode;
        __atomic_store_n(&ctl[DONE], (int64_t)(i + 1), __ATOMIC_RELEASE);
    }
    Py_END_ALLOW_THREADS;
    release_all(jobs, made, bodies, held);
    PyBuffer_Release(&control);
    PyBuffer_Release(&out);
    Py_RETURN_NONE;
fail:
    release_all(jobs, made, bodies, held);
    PyBuffer_Release(&control);
    PyBuffer_Release(&out);
    return NULL;
}

/* done(control): how many verdicts check_folders has written (read with acquire:
 * the verdicts before it are whole). */
static PyObject *done(PyObject *module, PyObject *arg) {
    (void)module;
    Py_buffer control;
    if (PyObject_GetBuffer(arg, &control, PyBUF_SIMPLE) != 0) {
        return NULL;
    }
    if (control.len < (Py_ssize_t)(CONTROL_SLOTS * sizeof(int64_t)) || ((uintptr_t)control.buf % 8)) {
        PyBuffer_Release(&control);
        PyErr_SetString(PyExc_ValueError, "done: control too small or not aligned");
        return NULL;
    }
    int64_t value = __atomic_load_n(&((int64_t *)control.buf)[DONE], __ATOMIC_ACQUIRE);
    PyBuffer_Release(&control);
    return PyLong_FromLongLong(value);
}

/* tell(control, slot, value): set REACHED or STOP for a running check_folders. */
static PyObject *tell(PyObject *module, PyObject *args) {
    (void)module;
    Py_buffer control;
    int slot;
    long long value;
    if (!PyArg_ParseTuple(args, "w*iL:tell", &control, &slot, &value)) {
        return NULL;
    }
    if (control.len < (Py_ssize_t)(CONTROL_SLOTS * sizeof(int64_t)) || ((uintptr_t)control.buf % 8) ||
        (slot != REACHED && slot != STOP)) {
        PyBuffer_Release(&control);
        PyErr_SetString(PyExc_ValueError, "tell: control too small or not aligned, or no such slot");
        return NULL;
    }
    __atomic_store_n(&((int64_t *)control.buf)[slot], (int64_t)value, __ATOMIC_RELEASE);
    PyBuffer_Release(&control);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"all_match", all_match, METH_VARARGS,
     "all_match(body, names_at, names_end, records_at, count, fd, cutoff) -> int | None\n\n"
     "PackedFolder.all_match with os.stat, on the folder open as fd."},
    {"check_folders", check_folders, METH_VARARGS,
     "check_folders(root_fd, jobs, bodies, cutoff, control, out) -> None\n\n"
     "The preload's loop over folders, the GIL released (see preloadthread.py)."},
    {"done", done, METH_O, "done(control) -> int: verdicts written so far."},
    {"tell", tell, METH_VARARGS, "tell(control, slot, value) -> None: set REACHED (0) or STOP (1)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_statmatch", "The walk's stat loop in C (see packedfolder.all_match).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__statmatch(void) { return PyModule_Create(&module); }

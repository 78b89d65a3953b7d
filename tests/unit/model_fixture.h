/*
 * model_fixture.h — helpers shared by the model runtime and gpu-evald tests: scratch
 * directories, random bundles, and bundles rewritten with one defect
 * (a tensor dropped or replaced, a metadata value changed).
 */
#ifndef SF_MODEL_FIXTURE_H
#define SF_MODEL_FIXTURE_H

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/model.h"

/* A fresh directory under TMPDIR (or /tmp); fx_rmdir() removes it. */
static inline void fx_tmpdir(char out[256]) {
    const char *base = getenv("TMPDIR");
    snprintf(out, 256, "%s/sf-evald-XXXXXX", base && base[0] ? base : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(out));
}

/* Remove a scratch directory and the files in it (the tests make no
 * subdirectories). */
static inline void fx_rmdir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char p[1024];
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            remove(p);
        }
    closedir(d);
    rmdir(dir);
}

/* Write a random `arch` bundle (sf_bundle_write_random) to dir/name. */
static inline void fx_random_bundle(const char *dir, const char *name, const char *arch,
                                    uint64_t seed, int canary, char path[512]) {
    sf_arch a;
    ck_assert_int_eq(sf_arch_preset(arch, &a), SF_OK);
    snprintf(path, 512, "%s/%s", dir, name);
    sf_err e = {0};
    int rc = sf_bundle_write_random(path, &a, seed, canary, &e);
    ck_assert_msg(rc == SF_OK, "sf_bundle_write_random: %s", e.msg);
}

/* A fresh scratch directory `dir` holding a random tiny bundle dir/NAME
 * (seed; canary positions), whose path goes to `path`. */
static inline void fx_tiny_bundle(char dir[256], const char *name, uint64_t seed, int canary,
                                  char path[512]) {
    fx_tmpdir(dir);
    fx_random_bundle(dir, name, "tiny", seed, canary, path);
}

/* A scratch directory holding a random tiny bundle, loaded. */
typedef struct fx_tiny {
    char dir[256], path[512];
    sf_bundle *b;
} fx_tiny;

static inline sf_bundle *fx_load(const char *path);

/* t->dir/NAME, a random tiny bundle (seed; canary positions), loaded. */
static inline sf_bundle *fx_tiny_open(fx_tiny *t, const char *name, uint64_t seed, int canary) {
    fx_tiny_bundle(t->dir, name, seed, canary, t->path);
    return t->b = fx_load(t->path);
}

/* Free the bundle and remove the directory. */
static inline void fx_tiny_close(fx_tiny *t) {
    sf_bundle_free(t->b);
    fx_rmdir(t->dir);
}

/* Tensor `name` of the tensor file `in` in *t, its data a malloc'd copy,
 * returned for editing before fx_rewrite writes it back (free it after). */
static inline void *fx_tensor_copy(const char *in, const char *name, sf_tensor *t) {
    sf_tensorfile *tf;
    sf_err e = {0};
    ck_assert_msg(sf_tensorfile_read(in, &tf, NULL, &e) == SF_OK, "%s", e.msg);
    const sf_tensor *v = sf_tensorfile_find(tf, name);
    ck_assert_msg(v != NULL, "%s: no tensor %s", in, name);
    void *d = malloc(v->nbytes);
    ck_assert_ptr_nonnull(d);
    memcpy(d, v->data, v->nbytes);
    *t = *v;
    t->name = name;
    t->data = d;
    sf_tensorfile_free(tf);
    return d;
}

/* Copy the tensor file `in` to `out`, leaving out tensor `drop` (may be
 * NULL), replacing the tensor named replace->name (may be NULL) and setting
 * metadata `key` to `value` (NULL key: unchanged). */
static inline void fx_rewrite(const char *in, const char *out, const char *drop,
                              const sf_tensor *replace, const char *key, const char *value) {
    sf_tensorfile *tf;
    sf_err e = {0};
    ck_assert_msg(sf_tensorfile_read(in, &tf, NULL, &e) == SF_OK, "%s", e.msg);
    int n = sf_tensorfile_count(tf), nm = sf_tensorfile_meta_count(tf);
    sf_tensor *ts = calloc((size_t)n + 1, sizeof *ts);
    sf_meta_kv *kv = calloc((size_t)nm + 1, sizeof *kv);
    int k = 0, found = 0;
    for (int i = 0; i < n; i++) {
        const sf_tensor *t = sf_tensorfile_at(tf, i);
        if (drop && strcmp(t->name, drop) == 0)
            continue;
        if (replace && strcmp(t->name, replace->name) == 0) {
            ts[k++] = *replace;
            found = 1;
            continue;
        }
        ts[k++] = *t;
    }
    if (replace && !found)
        ts[k++] = *replace;
    int km = 0, kfound = 0;
    for (int i = 0; i < nm; i++) {
        kv[km] = sf_tensorfile_meta_at(tf, i);
        if (key && strcmp(kv[km].key, key) == 0) {
            kv[km].value = value;
            kfound = 1;
        }
        km++;
    }
    if (key && !kfound)
        kv[km++] = (sf_meta_kv){key, value};
    ck_assert_msg(sf_tensorfile_write(out, kv, km, ts, k, &e) == SF_OK, "%s", e.msg);
    free(ts);
    free(kv);
    sf_tensorfile_free(tf);
}

/* Copy the tensor file `in` to `out` with several metadata changes:
 * kv[2i] is a key, kv[2i+1] its new value (NULL: the entry is removed;
 * a key not there is added), for i < n. Tensors are copied unchanged. */
static inline void fx_rewrite_meta(const char *in, const char *out, const char *const *kv, int n) {
    sf_tensorfile *tf;
    sf_err e = {0};
    ck_assert_msg(sf_tensorfile_read(in, &tf, NULL, &e) == SF_OK, "%s", e.msg);
    int nt = sf_tensorfile_count(tf), nm = sf_tensorfile_meta_count(tf);
    sf_tensor *ts = calloc((size_t)nt + 1, sizeof *ts);
    sf_meta_kv *m = calloc((size_t)(nm + n) + 1, sizeof *m);
    for (int i = 0; i < nt; i++)
        ts[i] = *sf_tensorfile_at(tf, i);
    int km = 0;
    for (int i = 0; i < nm; i++) {
        sf_meta_kv x = sf_tensorfile_meta_at(tf, i);
        int drop = 0;
        for (int j = 0; j < n; j++)
            if (strcmp(x.key, kv[2 * j]) == 0) {
                x.value = kv[2 * j + 1];
                drop = x.value == NULL;
            }
        if (!drop)
            m[km++] = x;
    }
    for (int j = 0; j < n; j++)
        if (kv[2 * j + 1] && !sf_tensorfile_meta(tf, kv[2 * j]))
            m[km++] = (sf_meta_kv){kv[2 * j], kv[2 * j + 1]};
    ck_assert_msg(sf_tensorfile_write(out, m, km, ts, nt, &e) == SF_OK, "%s", e.msg);
    free(ts);
    free(m);
    sf_tensorfile_free(tf);
}

/* The trained tiny bundle of tests/fixtures/models (train_tiny.py). */
#define FX_TRAINED_BUNDLE SF_SOURCE_ROOT "/tests/fixtures/models/trained-tiny.safetensors"

/* Loading `path` fails with status `rc` and a message containing `words`. */
static inline void fx_load_fails(const char *path, int rc, const char *words) {
    sf_bundle *b = NULL;
    sf_err e = {0};
    ck_assert_int_eq(sf_bundle_load(path, NULL, &b, &e), rc);
    ck_assert_msg(strstr(e.msg, words) != NULL, "load %s: '%s' lacks '%s'", path, e.msg, words);
}

/* A net on the cpu backend with default options; the test fails unless
 * it is made. */
static inline sf_net *fx_cpu_net(const sf_bundle *b) {
    sf_net *net = NULL;
    sf_err e = {0};
    int rc = sf_net_create(b, NULL, &net, &e);
    ck_assert_msg(rc == SF_OK, "sf_net_create: %s", e.msg);
    return net;
}

/* Load `path`; the test fails unless it loads. */
static inline sf_bundle *fx_load(const char *path) {
    sf_bundle *b;
    sf_err e = {0};
    int rc = sf_bundle_load(path, NULL, &b, &e);
    ck_assert_msg(rc == SF_OK, "load %s: %s", path, e.msg);
    return b;
}

#endif

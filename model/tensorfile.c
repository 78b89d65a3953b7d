/*
 * tensorfile.c — the safetensors container: read, validate, write.
 *
 * Format (https://github.com/huggingface/safetensors, "Format"): an 8-byte
 * little-endian unsigned header length N, N bytes of UTF-8 JSON, then the
 * tensor data. The JSON maps each tensor name to {"dtype", "shape",
 * "data_offsets": [begin, end]} (offsets relative to the end of the header)
 * and may hold "__metadata__", a string-to-string map. Everything read here
 * comes from disk or a fuzzer, so every length is checked before use and
 * every size computation is overflow-checked.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/io.h"
#include "common/sha256.h"
#include "model/internal.h"
#include "model/model.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "gpu-evald reads little-endian tensor data in place; big-endian hosts are not supported"
#endif

/* Largest header accepted (the reference implementation's limit). */
#define SF_ST_MAX_HEADER (100u * 1024u * 1024u)
#define SF_ALIGN         64

struct sf_tensorfile {
    sf_tensor *tensors;
    int n_tensors;
    char **meta_keys;
    char **meta_values;
    int n_meta;
    uint8_t *data; /* one 64-byte aligned block holding every tensor */
};

const char *sf_dtype_name(sf_dtype dt) {
    switch (dt) {
    case SF_DT_F32: return "F32";
    case SF_DT_I32: return "I32";
    case SF_DT_U16: return "U16";
    case SF_DT_U8: return "U8";
    }
    return "?";
}

size_t sf_dtype_size(sf_dtype dt) {
    switch (dt) {
    case SF_DT_F32: return 4;
    case SF_DT_I32: return 4;
    case SF_DT_U16: return 2;
    case SF_DT_U8: return 1;
    }
    return 0;
}

static int dtype_parse(const char *s, sf_dtype *out) {
    static const struct {
        const char *name;
        sf_dtype dt;
    } table[] = {{"F32", SF_DT_F32}, {"I32", SF_DT_I32}, {"U16", SF_DT_U16}, {"U8", SF_DT_U8}};
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(s, table[i].name) == 0) {
            *out = table[i].dt;
            return SF_OK;
        }
    return SF_EFORMAT;
}

void sf_tensorfile_free(sf_tensorfile *tf) {
    if (!tf)
        return;
    for (int i = 0; i < tf->n_tensors; i++)
        free((char *)tf->tensors[i].name);
    free(tf->tensors);
    for (int i = 0; i < tf->n_meta; i++) {
        free(tf->meta_keys[i]);
        free(tf->meta_values[i]);
    }
    free(tf->meta_keys);
    free(tf->meta_values);
    free(tf->data);
    free(tf);
}

/* Parse one tensor entry of the header into `t` (name not set). On error
 * the message names the tensor and the field. */
static int parse_entry(const char *file, const char *name, json_t *v, uint64_t data_len,
                       sf_tensor *t, uint64_t *begin, sf_err *err) {
    if (!json_is_object(v))
        return sf_err_set(err, SF_EFORMAT, "%s: tensor '%s': header entry is not an object", file,
                          name);
    json_t *jd = json_object_get(v, "dtype");
    if (!json_is_string(jd))
        return sf_err_set(err, SF_EFORMAT, "%s: tensor '%s': missing string field \"dtype\"", file,
                          name);
    if (dtype_parse(json_string_value(jd), &t->dtype) != SF_OK)
        return sf_err_set(err, SF_EFORMAT,
                          "%s: tensor '%s': dtype \"%.16s\" unsupported (F32, I32, U16, U8)", file,
                          name, json_string_value(jd));
    json_t *js = json_object_get(v, "shape");
    if (!json_is_array(js))
        return sf_err_set(err, SF_EFORMAT, "%s: tensor '%s': missing array field \"shape\"", file,
                          name);
    size_t nd = json_array_size(js);
    if (nd > SF_TENSOR_MAX_DIMS)
        return sf_err_set(err, SF_EFORMAT, "%s: tensor '%s': %zu dimensions (at most %d)", file,
                          name, nd, SF_TENSOR_MAX_DIMS);
    t->ndim = (int)nd;
    uint64_t elems = 1;
    for (size_t i = 0; i < nd; i++) {
        json_t *e = json_array_get(js, i);
        if (!json_is_integer(e) || json_integer_value(e) < 0)
            return sf_err_set(err, SF_EFORMAT,
                              "%s: tensor '%s': shape[%zu] is not a non-negative integer", file,
                              name, i);
        uint64_t d = (uint64_t)json_integer_value(e);
        if (d != 0 && elems > UINT64_MAX / d)
            return sf_err_set(err, SF_EFORMAT, "%s: tensor '%s': shape overflows", file, name);
        elems *= d;
        t->shape[i] = (int64_t)d;
    }
    size_t esz = sf_dtype_size(t->dtype);
    if (elems > UINT64_MAX / esz)
        return sf_err_set(err, SF_EFORMAT, "%s: tensor '%s': shape overflows", file, name);
    uint64_t nbytes = elems * esz;
    json_t *jo = json_object_get(v, "data_offsets");
    if (!json_is_array(jo) || json_array_size(jo) != 2 || !json_is_integer(json_array_get(jo, 0)) ||
        !json_is_integer(json_array_get(jo, 1)))
        return sf_err_set(err, SF_EFORMAT, "%s: tensor '%s': \"data_offsets\" is not [begin, end]",
                          file, name);
    json_int_t b = json_integer_value(json_array_get(jo, 0));
    json_int_t e = json_integer_value(json_array_get(jo, 1));
    if (b < 0 || e < b || (uint64_t)e > data_len)
        return sf_err_set(err, SF_EFORMAT,
                          "%s: tensor '%s': data_offsets [%" JSON_INTEGER_FORMAT
                          ", %" JSON_INTEGER_FORMAT "] outside the %" PRIu64 "-byte data section",
                          file, name, b, e, data_len);
    if ((uint64_t)(e - b) != nbytes)
        return sf_err_set(err, SF_EFORMAT,
                          "%s: tensor '%s': %" PRIu64
                          " data bytes but shape and dtype need %" PRIu64,
                          file, name, (uint64_t)(e - b), nbytes);
    if (nbytes > SIZE_MAX / 2)
        return sf_err_set(err, SF_EFORMAT, "%s: tensor '%s': too large", file, name);
    t->nbytes = (size_t)nbytes;
    *begin = (uint64_t)b;
    return SF_OK;
}

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *c = malloc(n);
    if (c)
        memcpy(c, s, n);
    return c;
}

int sf_tensorfile_parse(const uint8_t *bytes, size_t n, const char *name, sf_tensorfile **out,
                        sf_err *err) {
    *out = NULL;
    if (n < 8)
        return sf_err_set(err, SF_EFORMAT, "%s: %zu bytes, too short for a safetensors header",
                          name, n);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | bytes[i];
    if (hlen > SF_ST_MAX_HEADER || hlen > n - 8)
        return sf_err_set(err, SF_EFORMAT,
                          "%s: header length %" PRIu64 " exceeds the file (%zu bytes) or the "
                          "100 MiB limit; not a safetensors file or truncated",
                          name, hlen, n);
    uint64_t data_len = n - 8 - hlen;
    const uint8_t *data = bytes + 8 + hlen;

    json_error_t jerr;
    json_t *root = json_loadb((const char *)bytes + 8, (size_t)hlen, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return sf_err_set(err, SF_EFORMAT, "%s: header JSON, line %d column %d: %s", name,
                          jerr.line, jerr.column, jerr.text);
    int rc = SF_OK;
    sf_tensorfile *tf = calloc(1, sizeof *tf);
    uint64_t *begins = NULL;
    if (!tf) {
        rc = sf_err_set(err, SF_ENOMEM, "%s: out of memory", name);
        goto done;
    }
    if (!json_is_object(root)) {
        rc = sf_err_set(err, SF_EFORMAT, "%s: header JSON is not an object", name);
        goto done;
    }
    size_t n_keys = json_object_size(root);
    tf->tensors = calloc(n_keys ? n_keys : 1, sizeof *tf->tensors);
    begins = calloc(n_keys ? n_keys : 1, sizeof *begins);
    if (!tf->tensors || !begins) {
        rc = sf_err_set(err, SF_ENOMEM, "%s: out of memory", name);
        goto done;
    }
    /* Keys in header order: jansson keeps insertion order when iterating. */
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val) {
        if (strcmp(key, "__metadata__") == 0) {
            if (!json_is_object(val)) {
                rc = sf_err_set(err, SF_EFORMAT, "%s: \"__metadata__\" is not an object", name);
                goto done;
            }
            size_t nm = json_object_size(val);
            tf->meta_keys = calloc(nm ? nm : 1, sizeof(char *));
            tf->meta_values = calloc(nm ? nm : 1, sizeof(char *));
            if (!tf->meta_keys || !tf->meta_values) {
                rc = sf_err_set(err, SF_ENOMEM, "%s: out of memory", name);
                goto done;
            }
            const char *mk;
            json_t *mv;
            json_object_foreach(val, mk, mv) {
                if (!json_is_string(mv)) {
                    rc = sf_err_set(err, SF_EFORMAT,
                                    "%s: metadata \"%.64s\" is not a string (safetensors "
                                    "metadata maps strings to strings)",
                                    name, mk);
                    goto done;
                }
                tf->meta_keys[tf->n_meta] = dup_str(mk);
                tf->meta_values[tf->n_meta] = dup_str(json_string_value(mv));
                tf->n_meta++;
                if (!tf->meta_keys[tf->n_meta - 1] || !tf->meta_values[tf->n_meta - 1]) {
                    rc = sf_err_set(err, SF_ENOMEM, "%s: out of memory", name);
                    goto done;
                }
            }
            continue;
        }
        if (key[0] == '\0') {
            rc = sf_err_set(err, SF_EFORMAT, "%s: a tensor has an empty name", name);
            goto done;
        }
        sf_tensor *t = &tf->tensors[tf->n_tensors];
        rc = parse_entry(name, key, val, data_len, t, &begins[tf->n_tensors], err);
        if (rc != SF_OK)
            goto done;
        t->name = dup_str(key);
        if (!t->name) {
            rc = sf_err_set(err, SF_ENOMEM, "%s: out of memory", name);
            goto done;
        }
        tf->n_tensors++;
    }

    /* One aligned block; each tensor starts on a 64-byte boundary. */
    size_t total = 0;
    for (int i = 0; i < tf->n_tensors; i++) {
        size_t sz = (tf->tensors[i].nbytes + SF_ALIGN - 1) / SF_ALIGN * SF_ALIGN;
        if (sz < tf->tensors[i].nbytes || total > SIZE_MAX - sz) {
            rc = sf_err_set(err, SF_EFORMAT, "%s: tensor sizes overflow", name);
            goto done;
        }
        total += sz;
    }
    if (total > 0) {
        void *p = NULL;
        if (posix_memalign(&p, SF_ALIGN, total) != 0) {
            rc = sf_err_set(err, SF_ENOMEM, "%s: out of memory for %zu bytes of tensors", name,
                            total);
            goto done;
        }
        tf->data = p;
    }
    size_t off = 0;
    for (int i = 0; i < tf->n_tensors; i++) {
        sf_tensor *t = &tf->tensors[i];
        if (t->nbytes)
            memcpy(tf->data + off, data + begins[i], t->nbytes);
        t->data = tf->data ? tf->data + off : NULL;
        off += (t->nbytes + SF_ALIGN - 1) / SF_ALIGN * SF_ALIGN;
    }

done:
    json_decref(root);
    free(begins);
    if (rc != SF_OK) {
        sf_tensorfile_free(tf);
        return rc;
    }
    *out = tf;
    return SF_OK;
}

int sf_evald_read_file(const char *path, uint8_t **bytes, size_t *n, sf_err *err) {
    *bytes = NULL;
    *n = 0;
    struct stat st;
    /* never blocks: a FIFO or a device is refused before any read */
    int fd = sf_open_regular(path, &st, err);
    if (fd < 0)
        return fd == SF_ENOTFOUND ? SF_EIO : fd;
    size_t size = (size_t)st.st_size, got = 0;
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) {
        close(fd);
        return sf_err_set(err, SF_ENOMEM, "%s: out of memory for %zu bytes", path, size);
    }
    int rc = sf_read_full(fd, buf, size, &got);
    int bad = rc < 0 ? errno : 0;
    close(fd);
    if (rc < 0 || got != size) {
        free(buf);
        return sf_err_set(err, bad ? SF_EIO : SF_EFORMAT, "%s: read %zu of %zu bytes: %s", path,
                          got, size, bad ? strerror(bad) : "the file got shorter while being read");
    }
    *bytes = buf;
    *n = size;
    return SF_OK;
}

int sf_tensorfile_read(const char *path, sf_tensorfile **out, uint8_t sha256[32], sf_err *err) {
    *out = NULL;
    uint8_t *bytes;
    size_t n;
    int rc = sf_evald_read_file(path, &bytes, &n, err);
    if (rc != SF_OK)
        return rc;
    if (sha256 && (rc = sf_sha256(bytes, n, sha256, err)) < 0) {
        free(bytes);
        return sf_err_prefix(err, "%s", path);
    }
    rc = sf_tensorfile_parse(bytes, n, path, out, err);
    free(bytes);
    return rc;
}

const sf_tensor *sf_tensorfile_find(const sf_tensorfile *tf, const char *name) {
    for (int i = 0; i < tf->n_tensors; i++)
        if (strcmp(tf->tensors[i].name, name) == 0)
            return &tf->tensors[i];
    return NULL;
}

int sf_tensorfile_count(const sf_tensorfile *tf) {
    return tf->n_tensors;
}

const sf_tensor *sf_tensorfile_at(const sf_tensorfile *tf, int i) {
    return i >= 0 && i < tf->n_tensors ? &tf->tensors[i] : NULL;
}

const char *sf_tensorfile_meta(const sf_tensorfile *tf, const char *key) {
    for (int i = 0; i < tf->n_meta; i++)
        if (strcmp(tf->meta_keys[i], key) == 0)
            return tf->meta_values[i];
    return NULL;
}

int sf_tensorfile_meta_count(const sf_tensorfile *tf) {
    return tf->n_meta;
}

sf_meta_kv sf_tensorfile_meta_at(const sf_tensorfile *tf, int i) {
    sf_meta_kv kv = {NULL, NULL};
    if (i >= 0 && i < tf->n_meta) {
        kv.key = tf->meta_keys[i];
        kv.value = tf->meta_values[i];
    }
    return kv;
}

/* ---------------------------------------------------------------------------
 * Writing
 * ------------------------------------------------------------------------- */

/* Data order: larger element size first, then name; keeps every tensor
 * naturally aligned when the data section starts on an 8-byte boundary. */
static int cmp_write_order(const void *a, const void *b) {
    const sf_tensor *x = *(const sf_tensor *const *)a, *y = *(const sf_tensor *const *)b;
    size_t sx = sf_dtype_size(x->dtype), sy = sf_dtype_size(y->dtype);
    if (sx != sy)
        return sx > sy ? -1 : 1;
    return strcmp(x->name, y->name);
}

int sf_tensorfile_write(const char *path, const sf_meta_kv *meta, int n_meta,
                        const sf_tensor *tensors, int n_tensors, sf_err *err) {
    int rc = SF_OK;
    json_t *root = json_object();
    const sf_tensor **order = calloc(n_tensors > 0 ? (size_t)n_tensors : 1, sizeof *order);
    char *header = NULL;
    FILE *f = NULL;
    char tmp[4096];
    if (!root || !order) {
        rc = sf_err_set(err, SF_ENOMEM, "%s: out of memory", path);
        goto done;
    }
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp) {
        rc = sf_err_set(err, SF_EINVAL, "%s: path too long", path);
        goto done;
    }
    for (int i = 0; i < n_tensors; i++) {
        const sf_tensor *t = &tensors[i];
        if (!t->name || !t->name[0] || strcmp(t->name, "__metadata__") == 0) {
            rc = sf_err_set(err, SF_EINVAL, "%s: tensor %d has an empty or reserved name", path, i);
            goto done;
        }
        if (t->ndim < 0 || t->ndim > SF_TENSOR_MAX_DIMS) {
            rc = sf_err_set(err, SF_EINVAL, "%s: tensor '%s': %d dimensions", path, t->name,
                            t->ndim);
            goto done;
        }
        uint64_t elems = 1;
        for (int d = 0; d < t->ndim; d++)
            elems *= (uint64_t)t->shape[d];
        if (elems * sf_dtype_size(t->dtype) != t->nbytes || (t->nbytes && !t->data)) {
            rc = sf_err_set(err, SF_EINVAL, "%s: tensor '%s': %zu bytes do not match its shape",
                            path, t->name, t->nbytes);
            goto done;
        }
        if (json_object_get(root, t->name)) {
            rc = sf_err_set(err, SF_EINVAL, "%s: duplicate tensor name '%s'", path, t->name);
            goto done;
        }
        json_object_set_new(root, t->name, json_null()); /* placeholder for the check */
        order[i] = t;
    }
    qsort(order, (size_t)n_tensors, sizeof *order, cmp_write_order);
    uint64_t off = 0;
    for (int i = 0; i < n_tensors; i++) {
        const sf_tensor *t = order[i];
        json_t *shape = json_array();
        for (int d = 0; d < t->ndim; d++)
            json_array_append_new(shape, json_integer(t->shape[d]));
        json_t *offs = json_array();
        json_array_append_new(offs, json_integer((json_int_t)off));
        json_array_append_new(offs, json_integer((json_int_t)(off + t->nbytes)));
        json_object_set_new(root, t->name,
                            json_pack("{s:s, s:o, s:o}", "dtype", sf_dtype_name(t->dtype), "shape",
                                      shape, "data_offsets", offs));
        off += t->nbytes;
    }
    if (n_meta > 0) {
        json_t *m = json_object();
        for (int i = 0; i < n_meta; i++)
            json_object_set_new(m, meta[i].key, json_string(meta[i].value));
        json_object_set_new(root, "__metadata__", m);
    }
    header = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
    if (!header) {
        rc = sf_err_set(err, SF_ENOMEM, "%s: cannot serialise the header", path);
        goto done;
    }
    size_t hlen = strlen(header);
    size_t padded = (hlen + 7) / 8 * 8;
    uint8_t lenbuf[8];
    for (int i = 0; i < 8; i++)
        lenbuf[i] = (uint8_t)((uint64_t)padded >> (8 * i));
    f = fopen(tmp, "wb");
    if (!f) {
        rc = sf_err_set(err, SF_EIO, "%s: cannot create: %s", tmp, strerror(errno));
        goto done;
    }
    int ok = fwrite(lenbuf, 1, 8, f) == 8 && fwrite(header, 1, hlen, f) == hlen;
    for (size_t i = hlen; ok && i < padded; i++)
        ok = fputc(' ', f) != EOF;
    for (int i = 0; ok && i < n_tensors; i++)
        ok = order[i]->nbytes == 0 ||
             fwrite(order[i]->data, 1, order[i]->nbytes, f) == order[i]->nbytes;
    int why = ok ? 0 : errno;
    if (fclose(f) != 0 && ok) {
        ok = 0;
        why = errno;
    }
    f = NULL;
    if (!ok) {
        rc = sf_err_set(err, SF_EIO, "%s: cannot write: %s", tmp, strerror(why));
        remove(tmp);
        goto done;
    }
    if (rename(tmp, path) != 0) {
        rc = sf_err_set(err, SF_EIO, "%s: rename from %s failed: %s", path, tmp, strerror(errno));
        remove(tmp);
        goto done;
    }
done:
    free(header);
    free(order);
    json_decref(root);
    return rc;
}

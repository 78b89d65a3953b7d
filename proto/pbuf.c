/* pbuf.c — the shared byte buffer and protobuf-c unpack arena (pbuf.h). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/pbuf.h"

int sf_buf_reserve(sf_buf *b, size_t need, uint64_t *allocs) {
    if (b->cap - b->len >= need)
        return SF_OK;
    if (need > SIZE_MAX / 2 - b->len)
        return SF_ENOMEM;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->len < need)
        cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p)
        return SF_ENOMEM;
    if (allocs)
        (*allocs)++;
    b->p = p;
    b->cap = cap;
    return SF_OK;
}

int sf_buf_append(sf_buf *b, const void *p, size_t n, uint64_t *allocs) {
    int rc = sf_buf_reserve(b, n, allocs);
    if (rc < 0)
        return rc;
    if (n)
        memcpy(b->p + b->len, p, n);
    b->len += n;
    return SF_OK;
}

void sf_buf_free(sf_buf *b) {
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* ---- arena ---------------------------------------------------------------
 * protobuf-c allocates every submessage, repeated array and bytes field of a
 * record separately. Serving those from one reused chunk is what makes the
 * read path allocation-free once warm: a round that does not fit spills into
 * malloc, and the next reset grows the chunk to the whole round's size. */

static void *arena_alloc(void *data, size_t size) {
    sf_arena *a = data;
    size_t need = (size + 15) & ~(size_t)15;
    if (need < size)
        return NULL;
    if (a->cap - a->used >= need) {
        void *p = a->chunk + a->used;
        a->used += need;
        return p;
    }
    if (a->nspill == a->spill_cap) {
        size_t cap = a->spill_cap ? a->spill_cap * 2 : 16;
        uint8_t **s = realloc(a->spill, cap * sizeof *s);
        if (!s)
            return NULL;
        if (a->allocs)
            (*a->allocs)++;
        a->spill = s;
        a->spill_cap = cap;
    }
    uint8_t *p = malloc(need ? need : 16);
    if (!p)
        return NULL;
    if (a->allocs)
        (*a->allocs)++;
    a->spill[a->nspill++] = p;
    a->spill_bytes += need;
    return p;
}

static void arena_free(void *data, void *p) {
    (void)data; /* everything goes at reset */
    (void)p;
}

void sf_arena_init(sf_arena *a, uint64_t *allocs) {
    memset(a, 0, sizeof *a);
    a->allocs = allocs;
    a->pb.alloc = arena_alloc;
    a->pb.free = arena_free;
    a->pb.allocator_data = a;
}

int sf_arena_reset(sf_arena *a) {
    size_t want = a->used + a->spill_bytes;
    for (size_t k = 0; k < a->nspill; k++)
        free(a->spill[k]);
    bool spilled = a->nspill > 0;
    a->nspill = 0;
    a->spill_bytes = 0;
    a->used = 0;
    if (spilled || !a->chunk) {
        size_t cap = a->cap ? a->cap : 64 << 10;
        while (cap < want + want / 4)
            cap *= 2;
        free(a->chunk);
        a->chunk = malloc(cap);
        a->cap = a->chunk ? cap : 0;
        if (!a->chunk)
            return SF_ENOMEM;
        if (a->allocs)
            (*a->allocs)++;
    }
    return SF_OK;
}

void sf_arena_free(sf_arena *a) {
    for (size_t k = 0; k < a->nspill; k++)
        free(a->spill[k]);
    free(a->spill);
    free(a->chunk);
    memset(a, 0, sizeof *a);
}

int sf_utf8_valid(const uint8_t *p, size_t n) {
    size_t i = 0;
    while (i < n) {
        /* eight ASCII bytes at a time: record strings are hex digests,
         * names and start texts */
        uint64_t w;
        while (n - i >= 8 && (memcpy(&w, p + i, 8), !(w & UINT64_C(0x8080808080808080))))
            i += 8;
        if (i == n)
            break;
        uint8_t c = p[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t k;
        uint32_t cp, min;
        if ((c & 0xe0) == 0xc0)
            k = 1, cp = c & 0x1fu, min = 0x80;
        else if ((c & 0xf0) == 0xe0)
            k = 2, cp = c & 0x0fu, min = 0x800;
        else if ((c & 0xf8) == 0xf0)
            k = 3, cp = c & 0x07u, min = 0x10000;
        else
            return 0;
        if (n - i <= k)
            return 0;
        for (size_t j = 1; j <= k; j++) {
            if ((p[i + j] & 0xc0) != 0x80)
                return 0;
            cp = cp << 6 | (p[i + j] & 0x3fu);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
        i += k + 1;
    }
    return 1;
}

/* sf_pb_strings_utf8 with `at` bytes of the path already in `field`; field
 * NULL: only the verdict (no path is formatted: the common, valid case on
 * every record read stays cheap). */
static int strings_utf8(const ProtobufCMessage *m, char *field, size_t cap, size_t at) {
    const ProtobufCMessageDescriptor *d = m->descriptor;
    const uint8_t *base = (const uint8_t *)m;
    for (unsigned f = 0; f < d->n_fields; f++) {
        const ProtobufCFieldDescriptor *fd = &d->fields[f];
        if (fd->type != PROTOBUF_C_TYPE_STRING && fd->type != PROTOBUF_C_TYPE_MESSAGE)
            continue;
        if ((fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
            *(const uint32_t *)(const void *)(base + fd->quantifier_offset) != fd->id)
            continue;
        size_t n = 1;
        const void *const *v = (const void *const *)(const void *)(base + fd->offset);
        if (fd->label == PROTOBUF_C_LABEL_REPEATED) {
            n = *(const size_t *)(const void *)(base + fd->quantifier_offset);
            v = *(const void *const *const *)v;
        }
        for (size_t k = 0; k < n; k++) {
            if (!v[k])
                continue;
            size_t next = at;
            if (field) {
                int w =
                    fd->label == PROTOBUF_C_LABEL_REPEATED
                        ? snprintf(field + at, cap - at, "%s%s[%zu]", at ? "." : "", fd->name, k)
                        : snprintf(field + at, cap - at, "%s%s", at ? "." : "", fd->name);
                next = w < 0 ? at : at + (size_t)w >= cap ? cap - 1 : at + (size_t)w;
            }
            if (fd->type == PROTOBUF_C_TYPE_STRING) {
                const char *str = v[k];
                if (!sf_utf8_valid((const uint8_t *)str, strlen(str)))
                    return 0;
            } else if (!strings_utf8(v[k], field, cap, next)) {
                return 0;
            }
        }
    }
    if (field && cap > at)
        field[at] = '\0';
    return 1;
}

int sf_pb_strings_utf8(const ProtobufCMessage *m, char *field, size_t cap) {
    if (cap)
        field[0] = '\0';
    if (strings_utf8(m, NULL, 0, 0))
        return 1;
    if (cap) /* again, naming the field */
        strings_utf8(m, field, cap, 0);
    return 0;
}

/* pbuf.c — the shared byte buffer and protobuf-c unpack arena (pbuf.h). */
#include <stdbool.h>
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

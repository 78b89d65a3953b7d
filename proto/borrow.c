/* borrow.c — sf_pb_unpack_borrowed (pbuf.h): a protobuf decoder for the
 * encoding protobuf-c's own packer writes, whose `bytes` fields point into
 * the input instead of being copied.
 *
 * It walks the wire format (protobuf's encoding guide: varints, tags of
 * field number << 3 | wire type, length-delimited fields, packed repeated
 * scalars) with protobuf-c's generated descriptors as the only schema: field
 * numbers, types, labels and struct offsets all come from there, so nothing
 * about a message is written twice. It decodes a subset and says so: any
 * encoding outside it returns SF_EFORMAT without a verdict, and the caller
 * hands the same bytes to protobuf_c_message_unpack, whose verdict stands.
 * Inside the subset the result is the struct protobuf-c would build (tests:
 * both packed again give the same bytes, on real and mutated records). */
#include <string.h>

#include "proto/pbuf.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "borrow.c copies little-endian fixed-width values as they are: a little-endian host only"
#endif

enum { MAX_DEPTH = 16 };

/* Wire types (protobuf encoding guide). */
enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

typedef struct cursor {
    const uint8_t *p, *end;
} cursor;

/* A varint of at most 10 bytes whose value fits 64 bits; 0 when it is
 * truncated or longer (outside the subset). */
static inline int varint(cursor *c, uint64_t *out) {
    if (c->p < c->end && !(*c->p & 0x80)) { /* one byte: tags, lengths, most values */
        *out = *c->p++;
        return 1;
    }
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (c->p == c->end)
            return 0;
        uint8_t b = *c->p++;
        if (shift == 63 && b > 1)
            return 0;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 1;
        }
    }
    return 0;
}

/* A tag or a length prefix: a varint of at most five bytes, the most
 * protobuf-c reads there (its tag and length scans stop at five bytes and
 * refuse the field); 0 otherwise. */
static inline int prefix(cursor *c, uint64_t *out) {
    const uint8_t *start = c->p;
    return varint(c, out) && c->p - start <= 5;
}

/* Bytes per element of a scalar type in a protobuf-c struct, or 0 for a type
 * outside the subset. */
static size_t scalar_size(ProtobufCType t) {
    switch (t) {
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_FLOAT: return 4;
    case PROTOBUF_C_TYPE_BOOL: return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_DOUBLE: return 8;
    default: return 0;
    }
}

/* 1 for the types the wire carries as fixed-width little-endian values
 * (scalar_size bytes each), 0 for varints. */
static int fixed_width(ProtobufCType t) {
    return t == PROTOBUF_C_TYPE_FLOAT || t == PROTOBUF_C_TYPE_DOUBLE;
}

static int wire_type_of(ProtobufCType t) {
    switch (t) {
    case PROTOBUF_C_TYPE_FLOAT: return WT_I32;
    case PROTOBUF_C_TYPE_DOUBLE: return WT_I64;
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_BYTES:
    case PROTOBUF_C_TYPE_MESSAGE: return WT_LEN;
    default: return WT_VARINT;
    }
}

/* One scalar of type t from the cursor into dst (scalar_size(t) bytes);
 * 0 when outside the subset: a uint32/int32 varint that protobuf-c would
 * truncate, a bool other than 0 or 1, a truncated fixed-width value. */
static inline int scalar(cursor *c, ProtobufCType t, void *dst) {
    uint64_t v;
    if (fixed_width(t)) {
        size_t n = scalar_size(t);
        if ((size_t)(c->end - c->p) < n)
            return 0;
        memcpy(dst, c->p, n); /* the wire's little-endian bytes, as they are */
        c->p += n;
        return 1;
    }
    if (!varint(c, &v))
        return 0;
    switch (t) {
    case PROTOBUF_C_TYPE_UINT32: {
        if (v > UINT32_MAX)
            return 0;
        uint32_t u = (uint32_t)v;
        memcpy(dst, &u, 4);
        return 1;
    }
    case PROTOBUF_C_TYPE_INT32: { /* negative values are sign-extended to 64 bits */
        if (v > INT32_MAX && v < UINT64_C(0xFFFFFFFF80000000))
            return 0;
        int32_t i = (int32_t)(uint32_t)v;
        memcpy(dst, &i, 4);
        return 1;
    }
    case PROTOBUF_C_TYPE_BOOL: {
        if (v > 1)
            return 0;
        protobuf_c_boolean b = (protobuf_c_boolean)v;
        memcpy(dst, &b, sizeof b);
        return 1;
    }
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_INT64: memcpy(dst, &v, 8); return 1;
    default: return 0;
    }
}

/* A packed repeated scalar field of `len` bytes at c->p: count, allocate,
 * decode. 0 when outside the subset; SF_ENOMEM as a negative value. */
static int packed(cursor *c, size_t len, const ProtobufCFieldDescriptor *fd, uint8_t *base,
                  ProtobufCAllocator *a) {
    size_t es = scalar_size(fd->type), n = 0;
    cursor body = {c->p, c->p + len};
    void *arr = NULL;
    if (fixed_width(fd->type)) {
        if (len % es)
            return 0;
        n = len / es;
        if (n && !(arr = a->alloc(a->allocator_data, len)))
            return SF_ENOMEM;
        if (n)
            memcpy(arr, body.p, len); /* fixed-width little-endian values, as they are */
    } else {
        for (const uint8_t *q = body.p; q < body.end; q++)
            n += !(*q & 0x80);
        if (len && (body.end[-1] & 0x80))
            return 0; /* a truncated last varint */
        if (n && !(arr = a->alloc(a->allocator_data, n * es)))
            return SF_ENOMEM;
        uint8_t *dst = arr;
        for (size_t k = 0; k < n; k++, dst += es)
            if (!scalar(&body, fd->type, dst))
                return 0;
        if (body.p != body.end)
            return 0;
    }
    *(size_t *)(void *)(base + fd->quantifier_offset) = n;
    *(void **)(void *)(base + fd->offset) = arr;
    c->p += len;
    return 1;
}

/* Decode the message of type d held by the cursor into m (initialised).
 * 1: decoded; 0: outside the subset; SF_ENOMEM. */
static int message(cursor *c, const ProtobufCMessageDescriptor *d, ProtobufCMessage *m,
                   ProtobufCAllocator *a, int depth) {
    if (depth > MAX_DEPTH || d->n_fields > 64)
        return 0;
    uint8_t *base = (uint8_t *)m;
    uint64_t seen = 0;
    while (c->p < c->end) {
        uint64_t tag;
        if (!prefix(c, &tag) || tag > UINT32_MAX || (tag >> 3) == 0)
            return 0;
        unsigned id = (unsigned)(tag >> 3);
        /* generated descriptors list fields by number: numbers 1..n are
         * found at once, others by protobuf-c's search */
        const ProtobufCFieldDescriptor *fd = id <= d->n_fields && d->fields[id - 1].id == id
                                                 ? &d->fields[id - 1]
                                                 : protobuf_c_message_descriptor_get_field(d, id);
        if (!fd || (fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF))
            return 0; /* unknown fields (protobuf-c keeps them) and oneof cases stay its own */
        uint64_t bit = (uint64_t)1 << (fd - d->fields);
        if (seen & bit)
            return 0; /* a repeated key merges or overrides in protobuf: its rule */
        seen |= bit;
        int wt = (int)(tag & 7);
        if (fd->label == PROTOBUF_C_LABEL_REPEATED) {
            uint64_t len;
            if (wt != WT_LEN || scalar_size(fd->type) == 0 || !prefix(c, &len) ||
                len > (uint64_t)(c->end - c->p))
                return 0;
            int rc = packed(c, (size_t)len, fd, base, a);
            if (rc <= 0)
                return rc;
            continue;
        }
        if (wt != wire_type_of(fd->type))
            return 0;
        void *dst = base + fd->offset;
        if (wt != WT_LEN) {
            if (scalar_size(fd->type) == 0 || !scalar(c, fd->type, dst))
                return 0;
            if (fd->label == PROTOBUF_C_LABEL_OPTIONAL)
                *(protobuf_c_boolean *)(void *)(base + fd->quantifier_offset) = 1;
            continue;
        }
        uint64_t len;
        if (!prefix(c, &len) || len > (uint64_t)(c->end - c->p))
            return 0;
        const uint8_t *body = c->p;
        c->p += len;
        if (fd->type == PROTOBUF_C_TYPE_STRING) {
            char *s = a->alloc(a->allocator_data, (size_t)len + 1);
            if (!s)
                return SF_ENOMEM;
            memcpy(s, body, (size_t)len);
            s[len] = '\0';
            *(char **)dst = s;
        } else if (fd->type == PROTOBUF_C_TYPE_BYTES) {
            ProtobufCBinaryData *bd = dst;
            bd->len = (size_t)len;
            bd->data = len ? (uint8_t *)(uintptr_t)body : NULL; /* borrowed */
            if (fd->label == PROTOBUF_C_LABEL_OPTIONAL)
                *(protobuf_c_boolean *)(void *)(base + fd->quantifier_offset) = 1;
        } else { /* PROTOBUF_C_TYPE_MESSAGE */
            const ProtobufCMessageDescriptor *sd = fd->descriptor;
            ProtobufCMessage *sub = a->alloc(a->allocator_data, sd->sizeof_message);
            if (!sub)
                return SF_ENOMEM;
            sd->message_init(sub);
            cursor inner = {body, body + len};
            int rc = message(&inner, sd, sub, a, depth + 1);
            if (rc <= 0)
                return rc;
            *(ProtobufCMessage **)dst = sub;
        }
    }
    /* an absent required field (proto2) fails protobuf-c's unpack: its verdict */
    uint64_t absent = ~seen & (d->n_fields == 64 ? ~(uint64_t)0 : ((uint64_t)1 << d->n_fields) - 1);
    for (; absent; absent &= absent - 1)
        if (d->fields[__builtin_ctzll(absent)].label == PROTOBUF_C_LABEL_REQUIRED)
            return 0;
    return 1;
}

int sf_pb_unpack_borrowed(const ProtobufCMessageDescriptor *d, const uint8_t *data, size_t len,
                          sf_arena *arena, ProtobufCMessage **out) {
    *out = NULL;
    ProtobufCAllocator *a = &arena->pb;
    ProtobufCMessage *m = a->alloc(a->allocator_data, d->sizeof_message);
    if (!m)
        return SF_ENOMEM;
    d->message_init(m);
    cursor c = {data, data + len};
    int rc = message(&c, d, m, a, 0);
    if (rc < 0)
        return rc;
    if (rc == 0)
        return SF_EFORMAT;
    *out = m;
    return SF_OK;
}

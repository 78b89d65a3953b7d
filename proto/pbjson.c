/* pbjson.c — any protobuf-c message as JSON (see pbjson.h). */
#include "proto/pbjson.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static json_t *int64_json(int64_t v, const sf_pbjson_opts *o) {
    if (!o->int64_strings)
        return json_integer((json_int_t)v);
    char s[24];
    snprintf(s, sizeof s, "%" PRId64, v);
    return json_string(s);
}

static json_t *uint64_json(uint64_t v, const sf_pbjson_opts *o) {
    if (!o->int64_strings)
        return json_integer((json_int_t)v);
    char s[24];
    snprintf(s, sizeof s, "%" PRIu64, v);
    return json_string(s);
}

static json_t *number(double v) {
    return isfinite(v) ? json_real(v) : json_null();
}

/* One value of field f at p (a repeated field's element, or the field). */
static json_t *value_json(const ProtobufCFieldDescriptor *f, const void *p,
                          const sf_pbjson_opts *o) {
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32: return json_integer(*(const int32_t *)p);
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32: return json_integer(*(const uint32_t *)p);
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64: return int64_json(*(const int64_t *)p, o);
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64: return uint64_json(*(const uint64_t *)p, o);
    case PROTOBUF_C_TYPE_FLOAT: return number(*(const float *)p);
    case PROTOBUF_C_TYPE_DOUBLE: return number(*(const double *)p);
    case PROTOBUF_C_TYPE_BOOL: return json_boolean(*(const protobuf_c_boolean *)p);
    case PROTOBUF_C_TYPE_ENUM: {
        int v = *(const int *)p;
        const ProtobufCEnumValue *ev =
            o->enum_names ? protobuf_c_enum_descriptor_get_value(f->descriptor, v) : NULL;
        return ev ? json_string(ev->name) : json_integer(v);
    }
    case PROTOBUF_C_TYPE_STRING: {
        const char *s = *(char *const *)p;
        return json_string(s ? s : "");
    }
    case PROTOBUF_C_TYPE_BYTES: {
        const ProtobufCBinaryData *b = p;
        static const char digits[] = "0123456789abcdef";
        char *hex = malloc(2 * b->len + 1);
        if (!hex)
            return NULL;
        for (size_t i = 0; i < b->len; i++) {
            hex[2 * i] = digits[b->data[i] >> 4];
            hex[2 * i + 1] = digits[b->data[i] & 15];
        }
        hex[2 * b->len] = '\0';
        json_t *s = json_string(hex);
        free(hex);
        return s;
    }
    case PROTOBUF_C_TYPE_MESSAGE: {
        const ProtobufCMessage *sub = *(const ProtobufCMessage *const *)p;
        return sub ? sf_pbjson_message(sub, o) : json_null();
    }
    }
    return json_null();
}

/* The size of one element of a repeated field of type t. */
static size_t element_size(ProtobufCType t) {
    switch (t) {
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE: return 8;
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_MESSAGE: return sizeof(void *);
    case PROTOBUF_C_TYPE_BYTES: return sizeof(ProtobufCBinaryData);
    case PROTOBUF_C_TYPE_BOOL: return sizeof(protobuf_c_boolean);
    default: return 4;
    }
}

json_t *sf_pbjson_message(const ProtobufCMessage *m, const sf_pbjson_opts *o) {
    if (o->special) {
        json_t *own = o->special(m, o->ctx);
        if (own)
            return own;
    }
    const ProtobufCMessageDescriptor *d = m->descriptor;
    json_t *obj = json_object();
    for (unsigned i = 0; obj && i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        const char *base = (const char *)m + f->offset;
        json_t *v;
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = *(const size_t *)((const char *)m + f->quantifier_offset);
            const char *arr = *(char *const *)base;
            v = json_array();
            for (size_t k = 0; v && k < n; k++)
                if (json_array_append_new(v, value_json(f, arr + k * element_size(f->type), o)) <
                    0) {
                    json_decref(v);
                    v = NULL;
                }
        } else {
            v = value_json(f, base, o);
        }
        if (!v || json_object_set_new(obj, f->name, v) < 0) {
            json_decref(obj);
            obj = NULL;
        }
    }
    return obj;
}

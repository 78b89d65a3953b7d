/*
 * pbjson.h — any protobuf-c message as JSON (jansson), walked by its
 * descriptor: one field walker for every JSON view of a message — the
 * coordinator's dashboard and `sf-status --json` (coordinator/dashboard.h)
 * and `sf-shard cat --json` / `stat --json` (shard/cli) — so a field added
 * to a .proto appears in each without code of its own.
 *
 * Form: an object with every field in field order under its .proto name;
 * 32-bit integers as JSON integers; 64-bit integers as integers, or as
 * decimal strings with int64_strings (JavaScript's numbers hold 2^53
 * exactly, not 2^64); floats and doubles as numbers, NaN and infinities as
 * null; bools as true/false; enums by value name with enum_names (else
 * their number); strings as strings (NULL as ""); bytes as lowercase hex;
 * nested messages as objects (NULL as null), unless `special` renders one
 * itself; repeated fields as arrays.
 */
#ifndef SF_PBJSON_H
#define SF_PBJSON_H

#include <jansson.h>
#include <protobuf-c/protobuf-c.h>

typedef struct sf_pbjson_opts {
    int int64_strings; /* 64-bit integers as decimal strings              */
    int enum_names;    /* enums by value name (else their number)         */
    /* A message this renders itself (a new reference), or NULL for the
     * walker's form; may be NULL. */
    json_t *(*special)(const ProtobufCMessage *m, void *ctx);
    void *ctx;
} sf_pbjson_opts;

/* The JSON of message m (a new reference), or NULL when out of memory. */
json_t *sf_pbjson_message(const ProtobufCMessage *m, const sf_pbjson_opts *o);

#endif

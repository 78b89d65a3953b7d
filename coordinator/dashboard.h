/*
 * dashboard.h — the coordinator's read-only dashboard (docs/operator.md
 * "Dashboard"): a page and JSON endpoints on its /metrics server
 * (common/metrics_http.h: the same port, the same address rule — loopback
 * unless security.metrics_public).
 *
 *   /                 the page (coordinator/dashboard.html, built in): run,
 *                     gate and loop views (#run, #gate, #loop) that poll the
 *                     endpoints below and draw SVG in the browser
 *   /api/status       a StatusReply (proto/fleet.proto) as JSON; the same
 *                     document `sf-fleet status --json` prints
 *   /api/workers      a WorkersReply: every worker the coordinator knows
 *   /api/rate         a RateHistory: the label count every
 *                     SF_DASH_RATE_PERIOD_S seconds (the labels/s plot)
 *   /api/errors       an ErrorLog: the newest SF_COORD_ERRORS_KEPT errors
 *                     (jobs failed, shards refused, refusals, expired
 *                     leases), newest first
 *   /api/gate         gate runs: {decided, verdict, pairs} (the keys below):
 *                     verdict.json's object and pairs.jsonl's lines as of the
 *                     pairs folded so far (docs/gate.md); 404 otherwise
 *   /api/loop         the loop's loop.json when the run is a generation of a
 *                     training loop (its output_dir is LOOP/genG/KIND); 404
 *                     otherwise
 *   /api/schema       the JSON Schema of /api/status, /api/workers,
 *                     /api/rate and /api/errors (also built as
 *                     dashboard.schema.json)
 *
 * One home for the shapes: the JSON of a message is made from its
 * protobuf-c descriptor (sf_dash_message_json), field names as in
 * fleet.proto, and so is the schema (sf_dash_schema_json); gate and loop
 * documents keep the keys of gate/stats.h and sf-fleet/loop_state.h.
 *
 * JSON form of a message: an object with every field in field order; 64-
 * and 32-bit integers as JSON integers, doubles as numbers (NaN and
 * infinities as null), bools as true/false, strings as strings (NULL as
 * ""), enums by value name, nested messages as objects (NULL as null),
 * repeated fields as arrays, bytes as lowercase hex.
 *
 * Threading: the endpoints run on the HTTP server's thread and take the
 * coordinator's snapshot locks only to copy what the loop published
 * (metrics_publish, every 250 ms); everything is formatted outside them.
 */
#ifndef SF_COORDINATOR_DASHBOARD_H
#define SF_COORDINATOR_DASHBOARD_H

#include <stddef.h>

#include "proto/fleet.pb-c.h"

enum {
    SF_DASH_RATE_PERIOD_S = 5,  /* seconds between label-count samples  */
    SF_DASH_RATE_SAMPLES = 720, /* samples kept: an hour at the period  */
    SF_DASH_REFRESH_MS = 2000,  /* how often the page polls             */
};

/* /api/gate's top-level keys. */
#define SF_DASH_GATE_DECIDED "decided" /* the verdict files are written  */
#define SF_DASH_GATE_VERDICT "verdict" /* verdict.json's object, now     */
#define SF_DASH_GATE_PAIRS   "pairs"   /* pairs.jsonl's lines, an array  */

/* The JSON form (above) of a message, compact, as a malloc'd
 * NUL-terminated string of *len bytes (the caller frees it); NULL when out
 * of memory. */
char *sf_dash_message_json(const ProtobufCMessage *m, size_t *len);

/* The /api/status document: sf_dash_message_json of a StatusReply. Both
 * the coordinator's endpoint and `sf-fleet status --json` call this. */
char *sf_fleet_status_json(const Spirefleet__StatusReply *st, size_t *len);

/* The JSON Schema (draft 2020-12) of the dashboard's message endpoints,
 * made from the descriptors of StatusReply, WorkersReply and RateHistory:
 * "$defs" holds one schema per message (every field required, no others),
 * "x-endpoints" maps each path to its $ref. Malloc'd, indented; NULL when
 * out of memory. */
char *sf_dash_schema_json(size_t *len);

#endif

/*
 * config_fixture.h — a run config for a test, from YAML printed with
 * printf arguments (fleet/config.h).
 */
#ifndef CONFIG_FIXTURE_H
#define CONFIG_FIXTURE_H

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fleet/config.h"

/* The run config of the YAML that fmt and its arguments print, which must
 * parse (errors name the document "test.yaml" and show it). */
static inline void config_of(sf_run_config *cfg, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static inline void config_of(sf_run_config *cfg, const char *fmt, ...) {
    char yaml[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(yaml, sizeof yaml, fmt, ap);
    va_end(ap);
    ck_assert_int_lt(n, (int)sizeof yaml);
    sf_err e = {0};
    int rc = sf_config_parse(yaml, strlen(yaml), "test.yaml", cfg, &e);
    ck_assert_msg(rc == SF_OK, "%s\n%s", e.msg, yaml);
}

#endif

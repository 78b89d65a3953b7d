/* test_common.c — error values, seed derivation, hex and SHA-256 hex
 * helpers, whole reads and writes, directory syncs. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "common/endpoint_file.h"
#include "common/io.h"
#include "common/registry.h"
#include "sf_check.h"
#include "sf_tmpdir.h"

START_TEST(err_set_formats_and_returns_code) {
    sf_err e = {0};
    int rc = sf_err_set(&e, SF_EINVAL, "field '%s' out of range: %d", "seeds.count", -3);
    ck_assert_int_eq(rc, SF_EINVAL);
    ck_assert_int_eq(e.code, SF_EINVAL);
    ck_assert_str_eq(e.msg, "field 'seeds.count' out of range: -3");
}
END_TEST

START_TEST(err_prefix_adds_context) {
    sf_err e = {0};
    sf_err_set(&e, SF_EFORMAT, "record 7: bad varint");
    ck_assert_int_eq(sf_err_prefix(&e, "%s", "shard-0001.lmdb"), SF_EFORMAT);
    ck_assert_str_eq(e.msg, "shard-0001.lmdb: record 7: bad varint");
}
END_TEST

START_TEST(err_set_null_is_safe) {
    ck_assert_int_eq(sf_err_set(NULL, SF_EIO, "x"), SF_EIO);
    ck_assert_str_eq(sf_strerror(SF_ECORRUPT), "digest mismatch");
    ck_assert_str_eq(sf_strerror(12345), "unknown error");
    ck_assert_str_eq(sf_strerror(SF_ECHILD), "child process failed");
    ck_assert_str_eq(sf_strerror(SF_EREMOTE), "error reply from peer");
}
END_TEST

/* A path too long for its temporary name is a bad argument, not an OS
 * failure: nothing is created. */
START_TEST(durable_write_refuses_a_path_too_long) {
    char path[4200];
    memset(path, 'a', sizeof path - 1);
    path[0] = '/';
    path[sizeof path - 1] = '\0';
    sf_err e = {0};
    ck_assert_int_eq(sf_write_file_durable(path, "x", 1, &e), SF_EINVAL);
    ck_assert_int_eq(e.code, SF_EINVAL); /* the message (path first) is cut at SF_ERR_MSG_MAX */
    ck_assert_int_eq(strncmp(e.msg, "/aaa", 4), 0);
}
END_TEST

START_TEST(mix64_matches_splitmix_reference) {
    /* SplitMix64 with state 0: the first output of the reference generator
     * (Vigna's splitmix64.c) is 0xE220A8397B1DCDAF. */
    ck_assert_uint_eq(sf_mix64(0), 0xE220A8397B1DCDAFull);
    ck_assert_uint_ne(sf_seed_derive(1, 2, 3, 4), sf_seed_derive(1, 2, 4, 3));
    ck_assert_uint_eq(sf_seed_derive(9, 8, 7, 6), sf_seed_derive(9, 8, 7, 6));
}
END_TEST

START_TEST(hex_round_trip) {
    const uint8_t bytes[4] = {0x00, 0xAB, 0x7f, 0xff};
    char hex[9];
    sf_hex(bytes, 4, hex);
    ck_assert_str_eq(hex, "00ab7fff");
    uint8_t back[4];
    ck_assert_int_eq(sf_unhex("00AB7fff", back, 4), SF_OK);
    ck_assert_mem_eq(back, bytes, 4);
    ck_assert_int_eq(sf_unhex("00ab7f", back, 4), SF_EFORMAT);
    ck_assert_int_eq(sf_unhex("00ab7fzz", back, 4), SF_EFORMAT);
}
END_TEST

/* SHA-256 of the empty string (FIPS 180-2 test vectors), three spellings. */
static const char EMPTY_LOWER[] =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
static const char EMPTY_UPPER[] =
    "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855";
static const char EMPTY_MIXED[] =
    "e3B0c44298Fc1c149AfbF4c8996fb92427ae41e4649b934ca495991b7852B855";

START_TEST(sha256_hex_either_case_parses_to_lower_case) {
    const char *in[] = {EMPTY_LOWER, EMPTY_UPPER, EMPTY_MIXED};
    for (int i = 0; i < 3; i++) {
        char out[SF_SHA256_HEX_LEN + 1];
        sf_err e = {0};
        ck_assert_int_eq(sf_sha256_hex_parse(in[i], out, &e), SF_OK);
        ck_assert_str_eq(out, EMPTY_LOWER);
        ck_assert(sf_sha256_hex_valid(in[i]));
    }
    /* only the lower-case spelling is canonical */
    ck_assert(sf_sha256_hex_canonical(EMPTY_LOWER));
    ck_assert(!sf_sha256_hex_canonical(EMPTY_UPPER));
    ck_assert(!sf_sha256_hex_canonical(EMPTY_MIXED));
    /* in place */
    char buf[SF_SHA256_HEX_LEN + 1];
    memcpy(buf, EMPTY_MIXED, sizeof buf);
    ck_assert_int_eq(sf_sha256_hex_parse(buf, buf, NULL), SF_OK);
    ck_assert_str_eq(buf, EMPTY_LOWER);
}
END_TEST

START_TEST(sha256_hex_wrong_length_is_refused_and_counted) {
    char s63[64], s65[66], out[SF_SHA256_HEX_LEN + 1] = "untouched";
    memcpy(s63, EMPTY_LOWER, 63);
    s63[63] = '\0';
    memcpy(s65, EMPTY_LOWER, 64);
    s65[64] = '0';
    s65[65] = '\0';
    sf_err e = {0};
    ck_assert_int_eq(sf_sha256_hex_parse(s63, out, &e), SF_EINVAL);
    ck_assert_int_eq(e.code, SF_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "is not 64 hex digits (it has 63 characters)"));
    ck_assert_ptr_nonnull(strstr(e.msg, s63)); /* the value is quoted */
    ck_assert_int_eq(sf_sha256_hex_parse(s65, out, &e), SF_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "(it has 65 characters)"));
    ck_assert_int_eq(sf_sha256_hex_parse("", out, &e), SF_EINVAL);
    ck_assert_str_eq(e.msg, "'' is not 64 hex digits (it has 0 characters)");
    ck_assert_str_eq(out, "untouched"); /* nothing written on failure */
    ck_assert(!sf_sha256_hex_valid(s63) && !sf_sha256_hex_valid(s65) && !sf_sha256_hex_valid(""));
    ck_assert(!sf_sha256_hex_canonical(s63) && !sf_sha256_hex_canonical(s65));
}
END_TEST

START_TEST(sha256_hex_non_hex_character_is_named) {
    char s[SF_SHA256_HEX_LEN + 1], out[SF_SHA256_HEX_LEN + 1];
    memcpy(s, EMPTY_LOWER, sizeof s);
    s[9] = 'g'; /* character 10 */
    sf_err e = {0};
    ck_assert_int_eq(sf_sha256_hex_parse(s, out, &e), SF_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "is not 64 hex digits (character 10, 'g', is not a hex "
                                        "digit)"));
    ck_assert(!sf_sha256_hex_valid(s) && !sf_sha256_hex_canonical(s));
    s[9] = ' ';
    ck_assert(!sf_sha256_hex_valid(s));
    s[9] = '\x07'; /* a control byte is described, not printed */
    ck_assert_int_eq(sf_sha256_hex_parse(s, out, &e), SF_EINVAL);
    ck_assert_str_eq(e.msg, "the value is not 64 hex digits (character 10 is the byte 0x07)");
    /* a 0x prefix is not part of the spelling */
    char px[SF_SHA256_HEX_LEN + 1];
    memcpy(px, "0x", 2);
    memcpy(px + 2, EMPTY_LOWER, 62);
    px[64] = '\0';
    ck_assert_int_eq(sf_sha256_hex_parse(px, out, &e), SF_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "character 2, 'x'"));
}
END_TEST

START_TEST(sha256_hex_null_is_refused) {
    char out[SF_SHA256_HEX_LEN + 1];
    sf_err e = {0};
    ck_assert_int_eq(sf_sha256_hex_parse(NULL, out, &e), SF_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "no SHA-256 given"));
    ck_assert_int_eq(sf_sha256_hex_parse(NULL, out, NULL), SF_EINVAL);
    ck_assert(!sf_sha256_hex_valid(NULL));
    ck_assert(!sf_sha256_hex_canonical(NULL));
}
END_TEST

START_TEST(whole_reads_and_writes_name_their_reason) {
    char dir[256], path[300];
    sf_tmpdir_make(dir, sizeof dir, "sf-common");
    snprintf(path, sizeof path, "%s/f", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(sf_write_full(fd, "0123456789", 10), SF_OK);
    ck_assert_int_eq(sf_pwrite_full(fd, "AB", 2, 4), SF_OK);
    char buf[16] = {0};
    ck_assert_int_eq(sf_pread_full(fd, buf, 10, 0), SF_OK);
    ck_assert_str_eq(buf, "0123AB6789");
    /* past the end: the file ends first, and the reason says so */
    int rc = sf_pread_full(fd, buf, 4, 8);
    ck_assert_int_eq(rc, SF_EFORMAT);
    ck_assert_str_eq(sf_io_reason(rc), "the file ends first");
    size_t got = 0;
    ck_assert_int_eq(lseek(fd, 6, SEEK_SET), 6);
    ck_assert_int_eq(sf_read_full(fd, buf, sizeof buf, &got), SF_OK);
    ck_assert_uint_eq(got, 4);
    close(fd);
    /* a closed descriptor: the OS's reason */
    rc = sf_pread_full(fd, buf, 1, 0);
    ck_assert_int_eq(rc, SF_EIO);
    ck_assert_str_eq(sf_io_reason(rc), strerror(EBADF));
    ck_assert_int_eq(sf_write_full(fd, "x", 1), SF_EIO);
    ck_assert_int_eq(errno, EBADF);
    sf_err e = {0};
    ck_assert_int_eq(sf_fsync_parent(path, &e), SF_OK);
    ck_assert_int_eq(sf_fsync_dir(path, &e), SF_EIO); /* a file, not a directory */
    char want[400];
    snprintf(want, sizeof want, "%s: cannot sync the directory: %s", path, strerror(ENOTDIR));
    ck_assert_str_eq(e.msg, want);
    sf_tmpdir_remove(dir);
}
END_TEST

/* A wildcard host becomes a host other machines can dial; anything else
 * is kept (common/endpoint_file.h). */
START_TEST(reachable_endpoint_replaces_only_a_wildcard_host) {
    char out[128];
    ck_assert_int_eq(sf_endpoint_reachable("tcp://0.0.0.0:41234", "node17", out, sizeof out),
                     SF_OK);
    ck_assert_str_eq(out, "tcp://node17:41234");
    ck_assert_int_eq(sf_endpoint_reachable("tcp://*:5555", "node17", out, sizeof out), SF_OK);
    ck_assert_str_eq(out, "tcp://node17:5555");
    ck_assert_int_eq(sf_endpoint_reachable("tcp://[::]:7", "n", out, sizeof out), SF_OK);
    ck_assert_str_eq(out, "tcp://n:7");
    ck_assert_int_eq(sf_endpoint_reachable("tcp://127.0.0.1:9", "n", out, sizeof out), SF_OK);
    ck_assert_str_eq(out, "tcp://127.0.0.1:9");
    ck_assert_int_eq(sf_endpoint_reachable("ipc:///tmp/x.sock", "n", out, sizeof out), SF_OK);
    ck_assert_str_eq(out, "ipc:///tmp/x.sock");
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    ck_assert_int_eq(sf_endpoint_reachable("tcp://0.0.0.0:1", NULL, out, sizeof out), SF_OK);
    ck_assert_ptr_nonnull(strstr(out, host));
    ck_assert_int_eq(sf_endpoint_reachable("tcp://*:1", "a-very-long-host-name", out, 12),
                     SF_EFULL);
}
END_TEST

/* Written atomically, read back without its newline; a missing file is
 * SF_ENOTFOUND (a server that has not started yet), not an I/O error. */
START_TEST(endpoint_file_round_trip_and_missing_file) {
    char dir[256], path[300], got[128];
    sf_tmpdir_make(dir, sizeof dir, "sf-endpoint");
    snprintf(path, sizeof path, "%s/coordinator.endpoint", dir);
    sf_err e = {0};
    ck_assert_int_eq(sf_endpoint_file_read(path, got, sizeof got, &e), SF_ENOTFOUND);
    ck_assert_ptr_nonnull(strstr(e.msg, "coordinator.endpoint"));
    ck_assert_int_eq(sf_endpoint_file_write(path, "tcp://127.0.0.1:4000", &e), SF_OK);
    ck_assert_int_eq(sf_endpoint_file_read(path, got, sizeof got, &e), SF_OK);
    ck_assert_str_eq(got, "tcp://127.0.0.1:4000");
    ck_assert_int_eq(sf_endpoint_file_write(path, "tcp://127.0.0.1:4001", &e), SF_OK);
    ck_assert_int_eq(sf_endpoint_file_read(path, got, sizeof got, &e), SF_OK);
    ck_assert_str_eq(got, "tcp://127.0.0.1:4001"); /* replaced, not appended */
    ck_assert_int_eq(sf_endpoint_file_read(path, got, 8, &e), SF_EFORMAT); /* does not fit */
    int fd = open(path, O_WRONLY | O_TRUNC);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(sf_endpoint_file_read(path, got, sizeof got, &e), SF_EFORMAT);
    ck_assert_ptr_nonnull(strstr(e.msg, "empty"));
    snprintf(path, sizeof path, "%s/no-such-dir/x.endpoint", dir);
    ck_assert_int_eq(sf_endpoint_file_write(path, "tcp://*:1", &e), SF_EIO);
    ck_assert_ptr_nonnull(strstr(e.msg, "No such file or directory"));
    sf_tmpdir_remove(dir);
}
END_TEST

/* The registry's champion file: written durably, read back; a missing one
 * is SF_ENOTFOUND; anything but one line of 64 lower-case hex digits or
 * "rollout" is SF_EFORMAT naming the file, and a FIFO does not block. */
START_TEST(registry_champion_file) {
    char dir[256], path[300], got[65], sha[65];
    sf_tmpdir_make(dir, sizeof dir, "sf-registry");
    snprintf(path, sizeof path, "%s/champion", dir);
    memset(sha, '7', 64);
    sha[64] = '\0';
    sf_err e = {0};
    ck_assert_int_eq(sf_registry_champion_read(path, got, &e), SF_ENOTFOUND);
    ck_assert_int_eq(sf_registry_champion_write(dir, SF_REGISTRY_ROLLOUT, &e), SF_OK);
    ck_assert_int_eq(sf_registry_champion_read(path, got, &e), SF_OK);
    ck_assert_str_eq(got, "rollout");
    ck_assert_int_eq(sf_registry_champion_write(dir, sha, &e), SF_OK);
    ck_assert_int_eq(sf_registry_champion_read(path, got, &e), SF_OK);
    ck_assert_str_eq(got, sha);
    sha[3] = 'A';
    ck_assert_int_eq(sf_registry_champion_write(dir, sha, &e), SF_EINVAL);
    static const char *const bad[] = {"", "\n", "rollout\nx\n", "7777\n", "ROLLOUT\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int fd = open(path, O_WRONLY | O_TRUNC);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(sf_write_full(fd, bad[i], strlen(bad[i])), SF_OK);
        close(fd);
        ck_assert_int_eq(sf_registry_champion_read(path, got, &e), SF_EFORMAT);
        ck_assert_ptr_nonnull(strstr(e.msg, path));
    }
    /* the boundary: a line and its newline that just fill the buffer */
    int fd = open(path, O_WRONLY | O_TRUNC);
    ck_assert_int_eq(sf_write_full(fd, "abc\n", 4), SF_OK);
    close(fd);
    char small[5];
    ck_assert_int_eq(sf_read_line_file(path, small, sizeof small, &e), SF_OK);
    ck_assert_str_eq(small, "abc");
    fd = open(path, O_WRONLY | O_TRUNC);
    ck_assert_int_eq(sf_write_full(fd, "abcd\n", 5), SF_OK);
    close(fd);
    ck_assert_int_eq(sf_read_line_file(path, small, sizeof small, &e), SF_EFORMAT);
    ck_assert_ptr_nonnull(strstr(e.msg, "longer than"));
    char fifo[320];
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    ck_assert_int_eq(sf_registry_champion_read(fifo, got, &e), SF_EFORMAT);
    ck_assert_ptr_nonnull(strstr(e.msg, "not a regular file"));
    unlink(fifo);
    char bundle[64];
    ck_assert_int_eq(sf_registry_bundle_path("reg", "ab", bundle, sizeof bundle), SF_OK);
    ck_assert_str_eq(bundle, "reg/ab.safetensors");
    ck_assert_int_eq(sf_registry_bundle_path("reg", "ab", bundle, 8), SF_EFULL);
    ck_assert_int_eq(sf_registry_dir_of("runs/x/models/champion", bundle, sizeof bundle), SF_OK);
    ck_assert_str_eq(bundle, "runs/x/models");
    ck_assert_int_eq(sf_registry_dir_of("champion", bundle, sizeof bundle), SF_OK);
    ck_assert_str_eq(bundle, ".");
    sf_tmpdir_remove(dir);
}
END_TEST

#include "test-common.tests.h" /* SF_TESTS: every START_TEST above (tests/meson.build) */
SF_CHECK_MAIN("common", "core", 0, NULL, NULL)

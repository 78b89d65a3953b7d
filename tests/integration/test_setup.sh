#!/bin/sh
# scripts/setup is idempotent: once everything is installed, a second run
# calls apt-get not at all; a missing package is installed and only that one.
# apt-get and dpkg-query are replaced by recording stubs (SF_APT_GET,
# SF_DPKG_QUERY), so the test changes nothing on the machine. TAP output.
set -u
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$(dirname "$0")/tap.sh"
tap_scratch sf-setup

cat > "$tmp/apt" <<STUB
#!/bin/sh
echo "\$*" >> "$tmp/apt.calls"
STUB
cat > "$tmp/dpkg-all" <<'STUB'
#!/bin/sh
printf 'install ok installed'
STUB
cat > "$tmp/dpkg-nocheck" <<'STUB'
#!/bin/sh
for last; do :; done
[ "$last" = check ] && exit 1
printf 'install ok installed'
STUB
chmod +x "$tmp/apt" "$tmp/dpkg-all" "$tmp/dpkg-nocheck"
want=$(grep -v '^[[:space:]]*#' "$root/scripts/packages.txt" | grep -vc '^[[:space:]]*$')

# 1. Everything present: no apt-get call at all, and it says so.
out=$(SF_APT_GET="$tmp/apt" SF_DPKG_QUERY="$tmp/dpkg-all" "$root/scripts/setup" --deps-only)
if [ ! -e "$tmp/apt.calls" ] && [ "$out" = "setup: all $want packages present" ]; then
  ok "all present: apt-get not called ($out)"
else
  notok "all present: expected no apt-get call, got: $(cat "$tmp/apt.calls" 2>/dev/null) / $out"
fi

# 2. One package missing: update once, install exactly that package.
rm -f "$tmp/apt.calls"
SF_APT_GET="$tmp/apt" SF_DPKG_QUERY="$tmp/dpkg-nocheck" "$root/scripts/setup" --deps-only >/dev/null
calls=$(cat "$tmp/apt.calls" 2>/dev/null)
expect="update -q
install -y -q --no-install-recommends check"
if [ "$calls" = "$expect" ]; then
  ok "one missing: installs only 'check'"
else
  notok "one missing: apt-get calls were: $calls"
fi

# 3. On this machine, after `make test` ran setup: a second run is a no-op.
rm -f "$tmp/apt.calls"
SF_APT_GET="$tmp/apt" "$root/scripts/setup" --deps-only >/dev/null
if [ ! -e "$tmp/apt.calls" ]; then
  ok "second run on this machine calls no apt-get"
else
  notok "second run would install: $(cat "$tmp/apt.calls")"
fi

# 4. Unknown arguments are refused with exit code 2.
SF_APT_GET="$tmp/apt" SF_DPKG_QUERY="$tmp/dpkg-all" "$root/scripts/setup" --bogus 2>/dev/null
if [ $? -eq 2 ]; then ok "unknown argument exits 2"; else notok "unknown argument exit code"; fi

tap_done

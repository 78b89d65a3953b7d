#!/bin/sh
# scripts/setup is idempotent: once everything is installed, a second run
# calls apt-get not at all; a missing package is installed and only that one.
# `scripts/setup demo` installs the [demo] section of scripts/packages.txt
# only, the default (test) both; each package is listed once.
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
want=$(grep -v '^[[:space:]]*#' "$root/scripts/packages.txt" | grep -v '^\[' | grep -vc '^[[:space:]]*$')

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

# 5. The sections: every line of the file is in exactly one selection, the
# demo's is a part of the test's, and no package is listed twice.
all=$("$root/scripts/setup" --list)
demo=$("$root/scripts/setup" demo --list)
n_all=$(printf '%s\n' "$all" | grep -c .)
n_demo=$(printf '%s\n' "$demo" | grep -c .)
dups=$(printf '%s\n' "$all" | sort | uniq -d | tr '\n' ' ')
outside=$(printf '%s\n' "$demo" |
  while read -r p; do printf '%s\n' "$all" | grep -qxF "$p" || echo "$p"; done)
if [ "$n_all" = "$want" ] && [ "$n_demo" -gt 0 ] && [ "$n_demo" -lt "$n_all" ] && [ -z "$dups" ] &&
  [ -z "$outside" ]; then
  ok "sections: demo $n_demo of $n_all packages, none twice"
else
  notok "sections: all $n_all (file $want), demo $n_demo, twice: $dups, demo only: $outside"
fi
if printf '%s\n' "$demo" | grep -qx meson && ! printf '%s\n' "$demo" | grep -qx 'check\|chromium\|slurm-wlm\|podman\|python3-torch'; then
  ok "demo: builds (meson), without the test-only packages"
else
  notok "demo selection: $(printf '%s\n' "$demo" | tr '\n' ' ')"
fi

# 6. demo: a missing test-only package is left alone; a missing demo package
# is installed, and --plan says what the package step will do.
rm -f "$tmp/apt.calls"
out=$(SF_APT_GET="$tmp/apt" SF_DPKG_QUERY="$tmp/dpkg-nocheck" "$root/scripts/setup" demo --deps-only)
if [ ! -e "$tmp/apt.calls" ] && [ "$out" = "setup: all $n_demo packages the demo needs present" ]; then
  ok "demo: 'check' missing, nothing installed"
else
  notok "demo with check missing: $(cat "$tmp/apt.calls" 2>/dev/null) / $out"
fi
cat >"$tmp/dpkg-nomeson" <<'STUB'
#!/bin/sh
for last; do :; done
[ "$last" = meson ] && exit 1
printf 'install ok installed'
STUB
chmod +x "$tmp/dpkg-nomeson"
plan=$(SF_APT_GET="$tmp/apt" SF_DPKG_QUERY="$tmp/dpkg-nomeson" "$root/scripts/setup" demo --plan)
SF_APT_GET="$tmp/apt" SF_DPKG_QUERY="$tmp/dpkg-nomeson" "$root/scripts/setup" demo --deps-only >/dev/null
calls=$(cat "$tmp/apt.calls" 2>/dev/null)
if [ "$calls" = "update -q
install -y -q --no-install-recommends meson" ] &&
  [ "$plan" = "installing 1 of the $n_demo Debian packages the demo needs" ]; then
  ok "demo: installs only 'meson'; plan: $plan"
else
  notok "demo with meson missing: $calls / $plan"
fi
plan=$(SF_APT_GET="$tmp/apt" SF_DPKG_QUERY="$tmp/dpkg-all" "$root/scripts/setup" --plan)
if [ "$plan" = "Debian packages: all $want are installed" ]; then
  ok "plan, nothing missing: $plan"
else
  notok "plan, nothing missing: $plan"
fi

tap_done

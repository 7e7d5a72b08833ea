#!/usr/bin/env bash
# Installs what the leaderboard's slow tests drive: Chromium (browser tests, via Playwright's Python
# package) and PostgreSQL (concurrency tests; the tests start their own throw-away server).
# Debian/Ubuntu only. Idempotent: installs only what is missing. Run as root or with sudo.
set -euo pipefail

missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
compgen -G "/usr/lib/postgresql/*/bin/pg_ctl" >/dev/null || missing+=(postgresql)
# PyICU (the leaderboard's look-alike team names) compiles against the system's ICU.
pkg-config --exists icu-i18n 2>/dev/null || missing+=(libicu-dev pkg-config)
command -v g++ >/dev/null || missing+=(g++)

if [ ${#missing[@]} -eq 0 ]; then
    echo "chromium, postgresql and the ICU headers are already installed"
    exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
    sudo="sudo"
fi
echo "installing: ${missing[*]}"
$sudo apt-get update
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"

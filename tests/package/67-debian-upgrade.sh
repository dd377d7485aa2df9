#!/usr/bin/env bash
# Upgrades that always upgrade: docs/sysadmin.md's "Upgrades" recipe, run as
# written in a clone of an upstream repository (made here from this
# tree), on this host:
#  - commit one: dpkg-buildpackage -us -uc -b in the clone, dpkg -i;
#  - commit two in the upstream: the recipe (git pull, build, apt-get
#    install) exits 0, the second build's version is higher
#    (dpkg --compare-versions), apt upgrades to it and dpkg reports it
#    installed;
#  - the recipe again with nothing new to pull fails, and says
#    "nothing to upgrade", without building;
#  - debian/pkg-version outside git (git archive) prints
#    debian/changelog's version and warns; in a shallow clone it fails.
# The builds skip make check (DEB_BUILD_OPTIONS=nocheck; 72 runs it).
# Takes two package builds (about 3 minutes on 2 busy cores).
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"
. "$(dirname -- "$0")/../lib/package.sh"

W=$PKG_WORK/upgrade
UP=$W/upstream
CL=$W/clone/idemorders
trap pkg_cleanup EXIT
pkg_lock
rm -rf "$PKG_WORK"
mkdir -p "$UP" "$W/first"
dpkg --purge idemorders >/dev/null 2>&1

gitc() { git -c user.name=upgrade-test -c user.email=upgrade-test@localhost "$@"; }

# --- the upstream: this tree as it is, one commit; its clone ------------------
pkg_copy_tree "$UP"
if gitc -C "$UP" init -q && gitc -C "$UP" add -A && gitc -C "$UP" commit -q -m one &&
    git clone -q "$UP" "$CL"; then
	ok "an upstream repository of this tree (one commit) and its clone"
else
	fail "upstream" "cannot make the repositories"
	finish
fi

# --- commit one: built and installed ---------------------------------------------
t=$SECONDS
if (cd "$CL" && DEB_BUILD_OPTIONS="nocheck parallel=2" dpkg-buildpackage -us -uc -b) \
    >"$W/build1.log" 2>&1 9>&- 8>&-; then
	ok "dpkg-buildpackage of commit one ($((SECONDS - t)) s)"
else
	fail "dpkg-buildpackage" "$(tail -n 5 "$W/build1.log" | tr '\n' ' ')"
	finish
fi
mv "$W"/clone/idemorders_* "$W/first/"
PKG_DEB=$(ls "$W"/first/idemorders_*_amd64.deb | head -n 1)
V1=$(dpkg-deb -f "$PKG_DEB" Version)
pkg_install_deps "$PKG_DEB"
pkg_install || finish
[[ $(dpkg-query -W -f='${Version}' idemorders) == "$V1" ]] && ok "installed $V1" ||
    fail "install" "installed $(dpkg-query -W -f='${Version}' idemorders)"

# --- docs/sysadmin.md's recipe --------------------------------------------------------
# The indented lines of "### Upgrades" ("  # comment" dropped), as one
# script that stops at the first failure; apt-get install answers yes
# and waits for the dpkg lock.
awk '/^### Upgrades/ { on = 1; next } on && /^##/ { exit } on && /^    [^ ]/ { print substr($0, 5) }' \
    "$REPO/docs/sysadmin.md" | sed -E 's/[[:space:]]{2,}# .*$//' >"$W/recipe"
sed -i 's/^apt-get install /apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends /' "$W/recipe"
grep -q '^git pull' "$W/recipe" && grep -q 'dpkg-buildpackage' "$W/recipe" &&
    ok "docs/sysadmin.md's \"Upgrades\": $(wc -l <"$W/recipe") commands" ||
    fail "docs/sysadmin.md's \"Upgrades\"" "no git pull and dpkg-buildpackage: $(tr '\n' ';' <"$W/recipe")"
# recipe OUT: run it in the clone; its status.
recipe() {
	(cd "$CL" && DEB_BUILD_OPTIONS="nocheck parallel=2" DEBIAN_FRONTEND=noninteractive \
	    bash -e "$W/recipe") >"$1" 2>&1 9>&- 8>&-
}

# --- commit two: the recipe upgrades ---------------------------------------------
echo "A change upstream." >>"$UP/README.md"
gitc -C "$UP" commit -q -am two
t=$SECONDS
recipe "$W/upgrade.out"
rc=$?
V2=$(dpkg-deb -f "$(ls -t "$W"/clone/idemorders_*_amd64.deb 2>/dev/null | head -n 1)" Version 2>/dev/null)
[[ $rc == 0 ]] && ok "the recipe after commit two: exit 0 ($((SECONDS - t)) s)" ||
    fail "the recipe after commit two" "exit $rc: $(tail -n 4 "$W/upgrade.out" | tr '\n' ' ')"
dpkg --compare-versions "$V2" gt "$V1" && ok "the build of commit two is a higher version: $V1 < $V2" ||
    fail "version of commit two" "'$V2' is not higher than '$V1'"
if grep -q 'already the newest version' "$W/upgrade.out"; then
	fail "apt after commit two" "$(grep -h 'newest version\|upgraded' "$W/upgrade.out" | tr '\n' ' ')"
fi
[[ $(dpkg-query -W -f='${Version}' idemorders) == "$V2" && $V2 != "$V1" ]] &&
    ok "apt upgraded idemorders to $V2" ||
    fail "upgrade" "installed $(dpkg-query -W -f='${Version}' idemorders), built $V1 then $V2"

# --- nothing new: the recipe fails, and says so ------------------------------------
t=$SECONDS
recipe "$W/again.out"
rc=$?
[[ $rc != 0 ]] && grep -q 'nothing to upgrade' "$W/again.out" &&
    ok "the recipe with nothing to pull: exit $rc, \"$(grep -m1 'nothing to upgrade' "$W/again.out")\"" ||
    fail "the recipe with nothing to pull" "exit $rc: $(tail -n 4 "$W/again.out" | tr '\n' ' ')"
grep -q 'dpkg-buildpackage: info' "$W/again.out" &&
    fail "the recipe with nothing to pull" "built anyway" ||
    ok "... before building ($((SECONDS - t)) s)"
[[ $(dpkg-query -W -f='${Version}' idemorders) == "$V2" ]] && ok "still $V2 installed" ||
    fail "after the recipe" "installed $(dpkg-query -W -f='${Version}' idemorders)"

# --- without git; a shallow clone ----------------------------------------------------
mkdir -p "$W/export"
git -C "$UP" archive HEAD | tar -x -C "$W/export"
base=$(cd "$W/export" && dpkg-parsechangelog -S Version)
out=$("$W/export/debian/pkg-version" 2>"$W/export.err")
[[ $out == "$base" ]] && grep -q 'not a git checkout' "$W/export.err" &&
    ok "without git: debian/changelog's $base, and a warning: $(cat "$W/export.err")" ||
    fail "without git" "'$out', stderr: $(cat "$W/export.err" 2>&1)"
git clone -q --depth 1 "file://$UP" "$W/shallow" 2>/dev/null
if "$W/shallow/debian/pkg-version" >"$W/shallow.out" 2>&1; then
	fail "shallow clone" "printed $(cat "$W/shallow.out")"
else
	grep -q 'shallow clone cannot count' "$W/shallow.out" && ok "a shallow clone: fails, $(cat "$W/shallow.out")" ||
	    fail "shallow clone" "$(cat "$W/shallow.out")"
fi

finish

#!/usr/bin/env bash
# The documentation: README.md is the front door and the guides under
# docs/ hold the rest, with nothing lost, nothing said twice, every link
# whole, and every guide shipped, installed and named where it belongs:
#  - everything the single README named before the guides existed (its
#    list is tests/package/79-docs-before.txt, made from that README by
#    `79-docs.sh --list README.md`) is still in README.md + docs/*.md:
#    each configuration key of src/conf.c it named (as `key`), each
#    subcommand of idemorders, tools/dev and the idemorders-* tools, and
#    each command line of its examples (an indented line starting with a
#    command, "  # comment" dropped, blanks squeezed);
#  - README.md stays short (under 200 lines), shows `tools/dev up` and
#    `tools/dev test`, and links every guide;
#  - no line of prose (50 characters or more, outside code and tables)
#    appears twice in README.md + docs/*.md: text is moved, not copied;
#  - every relative link of README.md and docs/*.md names a file of the
#    tree, and its #anchor a heading of that file (GitHub's anchors);
#  - every docs/*.md is in Makefile.am's nobase_dist_doc_DATA (so in
#    the tarball and installed in $(docdir)/docs), and README.md in
#    dist_doc_DATA;
#  - every guide a manual page names (.Pa NAME.md) exists under docs/, and
#    idemorders(8), idemorders.conf(5) and idemorders-verify(1) each name
#    at least one.
# Needs no stack: it reads the tree.
# shellcheck source=tests/lib/http.sh
. "$(dirname -- "$0")/../lib/http.sh"

# docs_py MODE ARGS...: the reading of Markdown both the list and the
# checks use (MODE list|links|prose; see each).
docs_py() {
	python3 - "$@" <<'PY'
import os, re, sys
mode, args = sys.argv[1], sys.argv[2:]

def names(conf_c, files):
    # list: what FILES name, one "kind value" a line.
    keys = re.findall(r'^\s*\{ "([a-z_]+)",\s*T_', open(conf_c).read(), re.M)
    text = ''.join(open(f).read() for f in files)
    out = ['key ' + k for k in keys if '`%s`' % k in text]
    sub = (r'idemorders (?:serve|migrate|check-config|expire|audit|relay'
           r'|stock (?:set|list|import)|events (?:list|show|redeliver|enable))'
           r'|idemorders-(?:verify|frontend-secret|db-password)'
           r'|tools/dev (?:up|down|status|sql|expire|audit|serve|test|chaos|fuzz|soak|bench'
           r'|cluster(?: (?:up|status|chaos|quorum|check|bench|down|partition))?)')
    out += ['command ' + c for c in
            sorted(set(re.findall(r'(?<![\w/.-])(?:%s)(?![\w-])' % sub, text)))]
    starts = ('tools/dev ', 'idemorders', 'curl ', 'post ', 'systemctl ', 'apt-get ',
              'mariadb', 'htpasswd ', 'service ', 'journalctl ', 'runuser ',
              'dpkg-buildpackage', 'debian/pkg-version', 'git ', 'make ', './configure',
              'autoreconf', 'lighty-enable-mod', 'a2enmod', 'cp ', 'printf ', 'echo ',
              'KEY=', 'BODY=', 'chgrp ', 'DEBIAN_FRONTEND', 'IDEMORDERS_')
    seen = set()
    for line in text.splitlines():
        if not line.startswith('    ') or line.startswith('     '):
            continue
        cmd = re.sub(r'\s+', ' ', re.sub(r'\s{2,}# .*$', '', line[4:]).rstrip())
        if cmd.startswith(starts) and not cmd.startswith('idemorders-verify:') \
                and cmd not in seen:
            seen.add(cmd)
            out.append('line ' + cmd)
    return out

def slug(h):
    h = re.sub(r'[^\w\- ]', '', h.strip().lower())
    return h.replace(' ', '-')

def anchors(path):
    found, code = set(), False
    for line in open(path):
        if line.startswith('```'):
            code = not code
        m = re.match(r'#{1,6} (.*)', line)
        if m and not code:
            found.add(slug(m.group(1)))
    return found

if mode == 'list':
    print('\n'.join(names(args[0], args[1:])))
elif mode == 'links':
    # links FILE...: each broken relative link, "FILE: TARGET".
    for f in args:
        text = re.sub(r'```.*?```', '', open(f).read(), flags=re.S)
        for m in re.finditer(r'\]\(([^)\s#]*)(?:#([^)\s]*))?\)', text):
            path, frag = m.group(1), m.group(2)
            if re.match(r'[a-z]+:', path):
                continue
            tgt = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
            if not os.path.isfile(tgt):
                print('%s: %s (no such file)' % (f, m.group(0)[2:-1]))
            elif frag and tgt.endswith('.md') and frag not in anchors(tgt):
                print('%s: %s (no such heading)' % (f, m.group(0)[2:-1]))
elif mode == 'prose':
    # prose FILE...: each line of prose said in two places, "LINE".
    where = {}
    for f in args:
        code = False
        for n, line in enumerate(open(f), 1):
            if line.startswith('```'):
                code = not code
            s = line.strip()
            if code or line.startswith('    ') or s.startswith(('|', '#')) or len(s) < 50:
                continue
            where.setdefault(s, []).append('%s:%d' % (f, n))
    for s, w in where.items():
        if len(w) > 1:
            print('%s (%s)' % (s, ', '.join(w)))
PY
}

if [[ ${1:-} == --list ]]; then
	shift
	docs_py list "$REPO/src/conf.c" "$@"
	exit
fi

cd "$REPO" || exit 1
FIXTURE=tests/package/79-docs-before.txt
shopt -s nullglob
DOCS=(docs/*.md)
shopt -u nullglob
[[ ${#DOCS[@]} -gt 0 ]] && ok "docs/: ${#DOCS[@]} guides" || { fail "docs/" "no guide"; finish; }

# --- nothing lost ----------------------------------------------------------
docs_py list src/conf.c README.md "${DOCS[@]}" >"$T_TMP/now"
grep -v '^#' "$FIXTURE" | sed '/^$/d' >"$T_TMP/before"
n=$(wc -l <"$T_TMP/before")
[[ $n -gt 150 ]] || fail "$FIXTURE" "only $n entries"
for kind in key command line; do
	lost=$(grep "^$kind " "$T_TMP/before" | sort -u | comm -23 - <(sort -u "$T_TMP/now"))
	total=$(grep -c "^$kind " "$T_TMP/before")
	[[ -z $lost ]] &&
	    ok "every $kind the README named before ($total) is in README.md + docs/" ||
	    fail "${kind}s no longer documented" "$(cut -d' ' -f2- <<<"$lost" | tr '\n' ';')"
done

# --- the front door ----------------------------------------------------------
lines=$(wc -l <README.md)
[[ $lines -lt 200 ]] && ok "README.md: $lines lines" || fail "README.md" "$lines lines, not under 200"
grep -q '^    tools/dev up ' README.md && grep -q '^    tools/dev test ' README.md &&
    ok "README.md shows tools/dev up and tools/dev test" ||
    fail "README.md" "no tools/dev up or tools/dev test command line"
unlinked=
for d in "${DOCS[@]}"; do
	grep -qF "]($d" README.md || unlinked+=" $d"
done
[[ -z $unlinked ]] && ok "README.md links every guide" || fail "README.md links" "not linked:$unlinked"

# --- said once, linked right -------------------------------------------------
twice=$(docs_py prose README.md "${DOCS[@]}")
[[ -z $twice ]] && ok "no line of prose in two places" ||
    fail "said twice" "$(head -n 5 <<<"$twice")"
broken=$(docs_py links README.md "${DOCS[@]}")
[[ -z $broken ]] && ok "every link of README.md and docs/ leads to a file and a heading" ||
    fail "broken links" "$(tr '\n' ';' <<<"$broken")"

# --- shipped, installed, named -----------------------------------------------
# am_var NAME: the files of Makefile.am's variable NAME.
am_var() {
	sed -n "/^$1 = /,/[^\\\\]\$/p" Makefile.am | sed "s/^$1 = //; s/\\\\\$//" | tr -s ' \t' '\n' | sed '/^$/d'
}
unshipped=
for d in "${DOCS[@]}"; do
	am_var nobase_dist_doc_DATA | grep -qxF "$d" || unshipped+=" $d"
done
[[ -z $unshipped ]] && ok "Makefile.am ships and installs every guide (nobase_dist_doc_DATA)" ||
    fail "Makefile.am nobase_dist_doc_DATA" "missing:$unshipped"
am_var dist_doc_DATA | grep -qxF README.md && ok "Makefile.am ships and installs README.md" ||
    fail "Makefile.am dist_doc_DATA" "no README.md"
for m in man/idemorders.8 man/idemorders.conf.5 man/idemorders-verify.1 \
    debian/idemorders-db-password.8 debian/idemorders-frontend-secret.8; do
	named=$(sed -n 's/^\.Pa \([a-z-]*\.md\)\b.*/\1/p' "$m")
	missing=
	for g in $named; do
		[[ -f docs/$g ]] || missing+=" $g"
	done
	case $m in man/*) [[ -n $named ]] || missing+=" (none named)" ;; esac
	[[ -z $missing ]] && ok "$m names guides that exist:$(tr '\n' ' ' <<<" $named")" ||
	    fail "$m" "guides:$missing"
done
finish

# Shared helpers of the toolchain double (sourced by bin/lean, bin/leanc, bin/lake).
# TEST DOUBLE: this is not Lean and decides nothing about proofs.

# The switch `double-no-leanexport` beside bin/ (a private copy only): a toolchain without the
# exporter and without the LeanExport library. The first double command run in that copy (the
# grader's `lean --version`) removes both, so that every check of the files sees them absent.
# shellcheck disable=SC2154  # `here` is the sourcing script's directory
if [ -f "$here/../double-no-leanexport" ]; then
    rm -f "$here/leanexport" 2>/dev/null
    rm -rf "$here/../lib/lean/LeanExport" "$here/../lib/lean/LeanExport.olean" 2>/dev/null
fi

# directives FILE KIND: print "<verb> <args>" for every line "-- double: KIND <verb> <args>" in FILE.
directives() {
    [ -f "$1" ] || return 0
    sed -n "s/^-- double: $2 //p" "$1"
}

# json_escape TEXT: TEXT as the inside of a JSON string (backslash, quote; no control characters).
json_escape() {
    printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' | tr '\n\t' '  '
}

# msg SEVERITY LINE FILE DATA: one `lean --json` message (a flattened SerialMessage, as
# lean4 src/Lean/Message.lean derives it: fileName, pos, endPos, severity, caption, data, ...).
msg() {
    printf '{"fileName":"%s","pos":{"line":%s,"column":0},"endPos":null,"keepFullRange":false,"severity":"%s","isSilent":false,"caption":"","data":"%s","kind":"[anonymous]"}\n' \
        "$(json_escape "$3")" "$2" "$1" "$(json_escape "$4")"
}

# resolve MODULE: the .olean real Lean would load for MODULE, or nothing, on the search path of
# the `lean` frontend (compile mode, and the imports `--run` elaborates): `$LEAN_PATH`, then the
# toolchain's own `lib/lean` (`initSearchPath`: `sp ++ (SearchPath.parse LEAN_PATH ++ [<prefix>/lib/lean])`,
# lean4 src/Lean/Util/Path.lean @0514f7ca8b36). `$LEAN_PATH` is split at `:` only, every piece
# kept as it is, empty ones too: `SearchPath.parse s := s.splitToList (fun c => SearchPath.separator
# == c) |>.map FilePath.mk` (src/Init/System/FilePath.lean @02edefea5275), so no globbing and no
# splitting at spaces. It is walked by parameter expansion, which neither globs nor drops an empty
# piece (an empty entry joins as `/ROOT`, as `FilePath.join "" r` is `"/" ++ r`). An unset
# `LEAN_PATH` adds no entry.
resolve() {
    if [ -n "${LEAN_PATH+set}" ]; then
        rest=$LEAN_PATH
        while :; do
            entry=${rest%%:*}
            if found=$(resolve_in "$1" "$entry"); then  # this entry decided
                [ -z "$found" ] || printf '%s\n' "$found"
                return 0
            fi
            case $rest in *:*) rest=${rest#*:} ;; *) break ;; esac
        done
    fi
    resolve_in "$1" "$here/../lib/lean"
    return 0
}

# resolve_in MODULE ENTRY...: as `findWithExt` over the search path ENTRY... (each one as it is):
# the FIRST entry holding the module's root directory, or a root `.olean` of any file type
# (`isDir`, `pathExists`, src/Init/System/IO.lean), decides; the module's file under it must then
# exist (else nothing, and Lean's own read fails later). Prints the path; returns 1 when no entry
# has the root. Judge.lean sets its search path to exactly two entries (`searchPathRef.set
# [a.toolchainLib, a.lib]`), never parsed, so the judge calls this directly.
resolve_in() {
    module=$1
    shift
    root=${module%%.*}
    if [ "$root" = LeanExport ] && [ -f "$here/../double-no-leanexport" ]; then
        return 0  # not in this toolchain (even if the removal above could not happen)
    fi
    rel=$(printf '%s' "$module" | tr . /)
    for entry in "$@"; do
        if [ -d "$entry/$root" ] || [ -e "$entry/$root.olean" ]; then
            if [ -f "$entry/$rel.olean" ]; then printf '%s\n' "$entry/$rel.olean"; fi
            return 0
        fi
    done
    return 1
}

# ascii_only: stdin to stdout with every character below 0x20 (but the newline) or at or above
# 0x7F written as a JSON \uXXXX escape (a surrogate pair above 0xFFFF), as Judge.lean's
# `asciiOnly` prints its verdict line.
ascii_only() {
    python3 -c '
import sys
def esc(n):
    return "\\u%04x" % n
out = []
for c in sys.stdin.read():
    n = ord(c)
    if c == "\n" or 0x20 <= n < 0x7F:
        out.append(c)
    elif n < 0x10000:
        out.append(esc(n))
    else:
        m = n - 0x10000
        out.append(esc(0xD800 + m // 1024) + esc(0xDC00 + m % 1024))
sys.stdout.write("".join(out))
'
}

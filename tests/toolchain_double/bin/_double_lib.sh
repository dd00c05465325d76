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

# resolve MODULE: the .olean real Lean would load for MODULE, or nothing. Like `findWithExt`
# (lean4 src/Lean/Util/Path.lean): the FIRST search-path entry holding the module's root
# directory or root .olean decides; the file under it must then exist.
resolve() {
    root=${1%%.*}
    if [ "$root" = LeanExport ] && [ -f "$here/../double-no-leanexport" ]; then
        return 0  # not in this toolchain (even if the removal above could not happen)
    fi
    rel=$(printf '%s' "$1" | tr . /)
    old_ifs=$IFS
    IFS=:
    for entry in $LEAN_PATH; do
        if [ -d "$entry/$root" ] || [ -f "$entry/$root.olean" ]; then
            IFS=$old_ifs
            [ -f "$entry/$rel.olean" ] && printf '%s\n' "$entry/$rel.olean"
            return 0
        fi
    done
    IFS=$old_ifs
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

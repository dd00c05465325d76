# Shared helpers of the toolchain double (sourced by bin/lake, bin/lean, bin/leanchecker).
# TEST DOUBLE: this is not Lean and decides nothing about proofs.

# directives FILE KIND: print "<verb> <args>" for every line "-- double: KIND <verb> <args>" in FILE.
directives() {
    [ -f "$1" ] || return 0
    sed -n "s/^-- double: $2 //p" "$1"
}

olean_dir=.lake/build/lib/lean/LeanCheckedNetwork

# fake_outputs MODULE: write what Lake would write for one module (contents derived from the source).
fake_outputs() {
    mkdir -p "$olean_dir" .lake/build/ir/LeanCheckedNetwork || return 1
    digest=$(sha256sum "LeanCheckedNetwork/$1.lean" | cut -d' ' -f1) || return 1
    printf 'double-olean %s %s\n' "$1" "$digest" > "$olean_dir/$1.olean" &&
    printf 'double-ilean %s %s\n' "$1" "$digest" > "$olean_dir/$1.ilean" &&
    printf '{"double-trace":"%s"}\n' "$digest" > "$olean_dir/$1.trace" &&
    printf '/* double C for %s */\n' "$1" > ".lake/build/ir/LeanCheckedNetwork/$1.c"
}

# up_to_date MODULE: the fake olean exists and matches the current source.
up_to_date() {
    [ -f "$olean_dir/$1.olean" ] || return 1
    digest=$(sha256sum "LeanCheckedNetwork/$1.lean" | cut -d' ' -f1)
    grep -q "$digest" "$olean_dir/$1.olean"
}

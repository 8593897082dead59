# Sourced by benchmarks that run pinpath under several environments in one run (agent-scale.sh, request-core.sh;
# issue 30's allocator experiment): ENVS is a whitespace-separated list of `label:VAR=value[,VAR=value…]`, e.g.
#   ENVS="mimalloc:LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 mxfast0:GLIBC_TUNABLES=glibc.malloc.mxfast=0"
# The plain environment (label `plain`) always comes first. Only the measured pinpath process gets the
# assignments (through env(1), which execs: its PID is pinpath's), never the servers, floors or peers beside it.
# Sets env_labels (the labels in order) and env_assignments[label] (its VAR=value words, space-separated).
# The caller defines die().
env_labels=(plain)
declare -A env_assignments=([plain]='')
for entry in ${ENVS:-}; do
    label=${entry%%:*} assignments=${entry#*:}
    [[ $entry == *:* && $label =~ ^[A-Za-z0-9_.+-]+$ && $label != plain ]] \
        || die "ENVS: '$entry' is not label:VAR=value[,VAR=value…] with a label of letters, digits and _.+- other than 'plain'"
    [[ -z ${env_assignments[$label]+set} ]] || die "ENVS: the label '$label' is given twice"
    words=()
    IFS=, read -ra parts <<<"$assignments"
    for part in "${parts[@]}"; do
        [[ $part =~ ^[A-Za-z_][A-Za-z0-9_]*=[^[:space:]]*$ ]] || die "ENVS: '$part' (in '$entry') is not VAR=value"
        words+=("$part")
    done
    env_labels+=("$label")
    env_assignments[$label]="${words[*]}"
done
unset entry label assignments words parts part
# Runs a command in the foreground under a label's environment: with_env LABEL COMMAND…. For a command started
# in the background whose PID is wanted, expand the words in the caller instead:
#   read -ra words <<<"${env_assignments[$label]}"; env "${words[@]}" COMMAND… & pid=$!
with_env() {
    local label=$1 words
    shift
    read -ra words <<<"${env_assignments[$label]}"
    env "${words[@]}" "$@"
}

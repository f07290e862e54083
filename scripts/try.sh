#!/usr/bin/env bash
# Run IRIS on its built-in defaults on a fresh Debian 12 machine: installs what it needs, then
# speaks "hey jarvis, what time is it in Tokyo" into a WAV with flite and runs the whole
# voice pipeline on it (wake word, end of speech, speech to text, the conversation, the spoken
# reply), printing the transcript, the reply and the stage timings.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/setup.sh
# flite speaks the request: pocketsphinx hears its voices with confidence, espeak-ng's rarely
# (README, "Understanding what was said"); IRIS itself answers with espeak-ng.
ensure_node "$IRIS_VOICE_NEEDS
flite flite"
ensure_modules
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
request="hey jarvis, what time is it in Tokyo"
flite -voice rms -t "$request" -o "$work/spoken.wav"
sox -D "$work/spoken.wav" -r 16000 -c 1 "$work/request.wav" pad 0.5 1.5   # -D: the same file every run
printf '> (spoken) %s\n' "$request"
npm run --silent iris -- listen --file "$work/request.wav" --out "$work/reply.wav"
printf 'reply audio: %s\n' "$(sox "$work/reply.wav" -n stat 2>&1 | awk '/Length/ {printf "%.1f s", $3} /RMS +amplitude/ {printf ", RMS %.3f (speech, not silence)", $3}')"
printf '> (typed) what is 17%% of 2,340\n'
npm run --silent iris -- ask "what is 17% of 2,340"

#!/usr/bin/env bash
# Run IRIS on its built-in defaults on a fresh Debian 12 machine: installs what it needs, then
# speaks "hey jarvis, what time is it in Tokyo" into a WAV with flite and runs the whole
# voice pipeline on it (wake word, end of speech, speech to text, the conversation, the spoken
# reply), printing the transcript, the reply and the stage timings. The request and the reply
# stay in build/try/ (gitignored, overwritten by the next run) to be played afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/setup.sh
# flite speaks the request: pocketsphinx hears its voices with confidence, espeak-ng's rarely
# (docs/voice.md, "Understanding what was said"); IRIS itself answers with espeak-ng.
ensure_node "$IRIS_VOICE_NEEDS
flite flite"
ensure_modules
work=$PWD/build/try   # absolute: the paths printed below must hold from wherever this was started
mkdir -p "$work"
rm -f "$work/reply.wav"   # never describe an earlier run's reply
request="hey jarvis, what time is it in Tokyo"
flite -voice rms -t "$request" -o "$work/spoken.wav"
sox -D "$work/spoken.wav" -r 16000 -c 1 "$work/request.wav" pad 0.5 1.5   # -D: the same file every run
rm "$work/spoken.wav"
printf '> (spoken) %s\n' "$request"
npm run --silent iris -- listen --file "$work/request.wav" --out "$work/reply.wav"
printf 'reply audio: %s\n' "$(sox "$work/reply.wav" -n stat 2>&1 | awk '/Length/ {printf "%.1f s", $3} /RMS +amplitude/ {printf ", RMS %.3f (speech, not silence)", $3}')"
printf 'to hear them: aplay %s %s\n' "$work/request.wav" "$work/reply.wav"
printf '> (typed) what is 17%% of 2,340\n'
npm run --silent iris -- ask "what is 17% of 2,340"

/**
 * The one schema of /etc/iris/config: types, defaults and the words every problem is reported
 * in. The `Config` type, validation, defaults and the commented default file all come from it.
 * Every `*_s` key has a `maximum`, and one set for this config its `maximumReason` (said by
 * `iris config check` and `iris config defaults`): each is far below the longest delay a Node
 * timer takes (2^31 − 1 ms, 24.8 days), past which it fires after 1 ms.
 */
import type { FromSchema } from 'json-schema-to-ts';

const mcpServer = {
  type: 'object',
  description: 'One MCP server: `command` (stdio) or `url` (HTTP).',
  additionalProperties: false,
  properties: {
    command: { type: 'string', description: 'Program to start for a stdio server.' },
    args: { type: 'array', items: { type: 'string' }, default: [], description: 'Its arguments.' },
    env: {
      type: 'object',
      additionalProperties: { type: 'string' },
      default: {},
      description: 'Extra environment for the server process.',
    },
    cwd: { type: 'string', description: 'Working directory of the server process.' },
    url: { type: 'string', format: 'http-url', description: 'Endpoint of an HTTP server.' },
    transport: {
      type: 'string',
      enum: ['streamable-http', 'sse'],
      default: 'streamable-http',
      description: 'HTTP transport; Streamable HTTP falls back to SSE when the server only speaks SSE.',
    },
    headers: {
      type: 'object',
      additionalProperties: { type: 'string' },
      default: {},
      description: 'HTTP headers, e.g. Authorization.',
    },
    enabled: { type: 'boolean', default: true, description: 'Offer this server to the model.' },
    oauth: {
      type: 'object',
      additionalProperties: false,
      description: 'OAuth sign-in for an HTTP server (iris mcp login NAME). Without it, a server that asks for OAuth still gets it: IRIS registers itself when the authorization server lets it.',
      properties: {
        grant: {
          type: 'string',
          enum: ['authorization_code', 'client_credentials'],
          default: 'authorization_code',
          description: 'authorization_code: a person signs in once with iris mcp login; client_credentials: IRIS signs in as itself with client_id and client_secret (needs issuer).',
        },
        client_id: { type: 'string', description: 'A client registered for IRIS at the authorization server (used before any other registration).' },
        client_secret: { type: 'string', description: 'Its secret, if it has one (use ${VAR}).' },
        client_metadata_url: {
          type: 'string',
          format: 'http-url',
          description: 'An HTTPS URL of a client ID metadata document to use as the client ID, when the authorization server supports them.',
        },
        issuer: {
          type: 'string',
          format: 'http-url',
          description: 'The authorization server IRIS may sign in at (its issuer URL); any other is refused. Required with client_credentials.',
        },
        scope: { type: 'string', description: 'Scopes to ask for when the server does not say (space-separated).' },
        redirect_port: {
          type: 'integer',
          minimum: 0,
          maximum: 65535,
          default: 0,
          description: 'Loopback port for the sign-in redirect (http://127.0.0.1:PORT/callback); 0: any free port.',
        },
      },
    },
    description: { type: 'string', description: 'What its tools are for, shown to the model (default: its tool names).' },
    confirm: {
      type: 'string',
      enum: ['destructive', 'always', 'never'],
      default: 'destructive',
      description: 'Ask for a spoken or typed "yes" before running: tools not marked read-only, every tool, or none.',
    },
    timeout_s: {
      type: 'number',
      exclusiveMinimum: 0,
      maximum: 3600,
      maximumReason: 'a call an hour long holds its turn; longer work belongs in the server\'s own queue',
      default: 30,
      description: 'Per tool call (seconds).',
    },
    allow: { type: 'array', items: { type: 'string' }, default: [], description: 'Only these tools (empty: all).' },
    deny: { type: 'array', items: { type: 'string' }, default: [], description: 'Never these tools.' },
  },
} as const;

const satellite = {
  type: 'object',
  description: 'A room: a Wyoming satellite (wyoming-satellite) IRIS is the brain of.',
  additionalProperties: false,
  required: ['uri'],
  properties: {
    uri: {
      type: 'string',
      pattern: '^tcp://(\\[[0-9a-fA-F:]+\\]|[^:/\\s]+):[0-9]{1,5}$',
      description: 'Where the satellite listens, e.g. "tcp://kitchen.lan:10700". Other hosts need the unit\'s IPAddressAllow (README.Debian).',
    },
    area: { type: 'string', default: '', description: 'The room it is in, told to the model ("the kitchen"); empty: what the satellite says, else the table\'s name.' },
    enabled: { type: 'boolean', default: true, description: 'Connect to it.' },
  },
} as const;

export const configSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    assistant: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        wake_word: {
          type: 'string',
          default: 'hey_jarvis',
          description: 'A bundled wake-word model name (hey_jarvis, alexa, hey_mycroft, hey_rhasspy, timer, weather), or a path to an openWakeWord .onnx file.',
        },
        wake_threshold: {
          type: 'number',
          exclusiveMinimum: 0,
          maximum: 1,
          default: 0.5,
          description: 'Wake-word score that counts as heard (0–1); higher means fewer false wakes, more misses.',
        },
        wake_check_from: {
          type: 'number',
          minimum: 0,
          maximum: 1,
          default: 0.03,
          description: 'A wake-word score from this up to wake_threshold is looked at again: pocketsphinx decodes the audio as the wake phrase, and it counts as heard when the phrase fits and, while IRIS talks, stands above what is left of its echo (a reverberant room, IRIS talking, a TV). 0, or at least wake_threshold: no second look.',
        },
        timezone: {
          type: 'string',
          format: 'iana-zone',
          default: '',
          description: "Home time zone (IANA, e.g. Europe/Berlin); empty means the system's.",
        },
        follow_up_s: {
          type: 'number',
          minimum: 0,
          maximum: 60,
          default: 5,
          description: 'Keep listening this long after a reply, without the wake word (seconds).',
        },
        forget_after_s: {
          type: 'number',
          minimum: 0,
          maximum: 86_400,
          maximumReason: 'a conversation a day old is not one to go on with',
          default: 300,
          description: 'Forget the conversation after this long without a turn (seconds); 0 keeps none.',
        },
        confirm_timeout_s: {
          type: 'number',
          exclusiveMinimum: 0,
          maximum: 3600,
          maximumReason: 'a question nobody answered for an hour is dropped, not kept open',
          default: 60,
          description: 'A question before a tool runs ("Should I …? Say yes") waits this long for the yes (seconds); after it, nothing runs.',
        },
      },
    },
    ollama: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        url: { type: 'string', format: 'http-url', default: 'http://127.0.0.1:11434', description: 'Ollama server.' },
        model: { type: 'string', minLength: 1, default: 'qwen2.5:7b', description: 'Model name as `ollama list` shows it.' },
        think: { type: 'boolean', default: false, description: 'Let thinking models think (slower replies).' },
        keep_alive: { type: 'string', default: '30m', description: 'How long Ollama keeps the model loaded.' },
        timeout_s: {
          type: 'number',
          exclusiveMinimum: 0,
          maximum: 3600,
          maximumReason: 'a model that has not answered within an hour is stuck, and its turn waits for it',
          default: 60,
          description: 'Per model call (seconds).',
        },
        temperature: { type: 'number', minimum: 0, maximum: 2, default: 0.3, description: 'Sampling temperature.' },
        max_tool_rounds: {
          type: 'integer',
          minimum: 1,
          maximum: 32,
          default: 8,
          description: 'Most model calls in one turn before IRIS answers with what it has.',
        },
      },
    },
    budget: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        context_tokens: {
          type: 'integer',
          minimum: 512,
          default: 8192,
          description: 'Sent as num_ctx; the prompt never exceeds it.',
        },
        tool_tokens: {
          type: 'integer',
          minimum: 0,
          default: 1500,
          description: 'All tool definitions in one request stay under this.',
        },
        reply_tokens: { type: 'integer', minimum: 16, default: 512, description: 'num_predict: longest reply.' },
        tool_result_chars: {
          type: 'integer',
          minimum: 200,
          default: 4000,
          description: 'Longer tool results are cut, with a marker.',
        },
      },
    },
    tools: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        time: { type: 'boolean', default: true, description: 'get_current_time' },
        calculator: { type: 'boolean', default: true, description: 'calculator' },
        timers: {
          type: 'boolean',
          default: true,
          description: 'set_timer, set_reminder, list_timers, cancel_timer',
        },
        timeout_s: {
          type: 'number',
          exclusiveMinimum: 0,
          maximum: 600,
          maximumReason: 'the native tools answer within milliseconds',
          default: 10,
          description: 'Per native tool call (seconds).',
        },
        expose_max: {
          type: 'integer',
          minimum: 0,
          maximum: 32,
          default: 16,
          description: 'Remote (MCP) tools most likely meant by a request, found by searching every tool\'s name, description and parameters, shown to the model in its first request beside the two meta-tools (the first 4 with their full schemas, the rest without parameter descriptions): at most this many, fewer past a clear drop in score, and only as many as fit in [budget] tool_tokens (iris tools search shows the choice); 0: the meta-tools only.',
        },
      },
    },
    daemon: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        socket_group: {
          type: 'string',
          default: '',
          description: 'Group that may use the control socket (iris status, ask, timers); empty: the daemon\'s own group.',
        },
      },
    },
    wyoming: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        listen: {
          type: 'string',
          pattern: '^(tcp://(\\[[0-9a-fA-F:]+\\]|[^:/\\s]+):[0-9]{1,5})?$',
          default: '',
          description: 'Serve Wyoming to Home Assistant (handle, asr, tts, wake) here, e.g. "tcp://127.0.0.1:10700"; empty: off. Other hosts need the unit\'s IPAddressAllow (README.Debian).',
        },
      },
    },
    satellites: {
      type: 'object',
      default: {},
      description: 'Rooms: one [satellites.NAME] table per Wyoming satellite.',
      properties: {
        discover: {
          type: 'boolean',
          default: false,
          description: 'Also find satellites on the network (_wyoming._tcp, through avahi-browse) and serve each as a room.',
        },
      },
      additionalProperties: satellite,
      propertyNames: { pattern: '^[A-Za-z0-9_.-]{1,60}$' },
    },
    audio: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        input: { type: 'string', default: 'default', description: 'ALSA capture device (arecord -L lists them); empty: no microphone.' },
        output: { type: 'string', default: 'default', description: 'ALSA playback device (aplay -L lists them).' },
        speaker_idle_s: {
          type: 'number',
          minimum: 1,
          maximum: 3600,
          maximumReason: 'past an hour the device is held, and silence written, for nothing',
          default: 30,
          description: 'IRIS keeps one stream open to the speaker while it talks (silence between clips, so the echo canceller sees one delay); it closes the stream and lets the device go after this long with nothing to play (seconds).',
        },
        silence_s: { type: 'number', minimum: 0.2, maximum: 5, default: 0.7, description: 'Silence that ends a command (seconds).' },
        complete_pause_s: {
          type: 'number',
          minimum: 0.1,
          maximum: 5,
          default: 0.2,
          description: 'Pause that ends a command whose words are whole and cannot go on ("remind me in an hour to call mom"), with the grammar recogniser; other commands wait silence_s (seconds).',
        },
        incomplete_pause_s: {
          type: 'number',
          minimum: 0.2,
          maximum: 5,
          default: 1.5,
          description: 'Silence that ends words that are only the start of a command ("set a timer for fifteen" …), with the grammar recogniser; never less than silence_s (seconds).',
        },
        early_answer: {
          type: 'boolean',
          default: false,
          description: 'Answer a whole command that could still go on ("what time is it" … "in Tokyo") after complete_pause_s when the answer only reads (the time, a sum, the timers left): if the person goes on, IRIS stops within a chunk, forgets that answer and answers the whole command. Timers, cancels and remote tools always wait. Only with the echo canceller working. Off by default: with the echo reference band-limited as the speaker plays it, the bench takes no answer back for its own echo and acts on nothing wrongly, but that is not yet tried on a live room (before it, most answers were taken back, and the echo once heard as more words and acted on).',
        },
        take_back_s: {
          type: 'number',
          minimum: 0.2,
          maximum: 5,
          default: 1,
          description: 'After an early answer, how long the person may pause and still go on, the answer then taken back; never less than silence_s (seconds).',
        },
        max_command_s: { type: 'number', minimum: 1, maximum: 60, default: 15, description: 'Longest command (seconds).' },
        no_speech_s: { type: 'number', minimum: 1, maximum: 60, default: 5, description: 'Give up when no command starts this long after the wake word (seconds).' },
        earcon: { type: 'boolean', default: true, description: 'Play a short chime when IRIS starts listening.' },
        echo_cancel: {
          type: 'boolean',
          default: true,
          description: 'Remove what IRIS plays from the microphone (with echo_canceller) before the wake word, VAD and recogniser, so a person is heard over IRIS and the wake word interrupts it; the delay between speaker and microphone is measured and tracked.',
        },
        echo_canceller: {
          type: 'string',
          enum: ['speexdsp', 'webrtc'],
          default: 'speexdsp',
          description: 'Which echo canceller, when echo_cancel is on: "speexdsp" (libspeexdsp1) or "webrtc" (webrtc-audio-processing\'s AEC, libwebrtc-audio-processing1, through a shim the package builds; if it cannot load, speexdsp is used and the log says why). The default is the one that did best on IRIS\'s room bench (docs/room.md).',
        },
        stop_word: {
          type: 'boolean',
          default: true,
          description: 'While IRIS plays a reply, an announcement or a ringing timer, "stop" (no wake word) silences it and acknowledges the timer (pocketsphinx keyword spotting on the echo-cancelled microphone).',
        },
        announce_repeats: { type: 'integer', minimum: 1, maximum: 20, default: 3, description: 'Say a due timer or reminder this many times unless the wake word acknowledges it.' },
        announce_every_s: { type: 'number', minimum: 2, maximum: 600, default: 15, description: 'Pause between repeats of an announcement (seconds).' },
      },
    },
    stt: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        engine: { type: 'string', enum: ['whisper', 'pocketsphinx'], default: 'whisper', description: 'Speech to text.' },
        model: {
          type: 'string',
          default: '/var/lib/iris/models/ggml-base.en.bin',
          description: 'whisper.cpp model file (iris models fetch base.en); without it, pocketsphinx with a command grammar. Its directory is the models dir, where iris models fetch puts models and Piper voices; unset, it is under $IRIS_STATE_DIR when that is set ($IRIS_STATE_DIR/models/ggml-base.en.bin).',
        },
        threads: { type: 'integer', minimum: 1, maximum: 64, default: 2, description: 'whisper.cpp threads.' },
        audio_ctx: {
          type: 'integer',
          minimum: 0,
          maximum: 1500,
          default: 512,
          description: 'whisper.cpp audio context (0 = the full 30 s window; 512 ≈ 10 s, 3–4× faster for short commands).',
        },
        min_confidence: {
          type: 'number',
          minimum: 0,
          maximum: 1,
          default: 0.6,
          description: 'Below this confidence a spoken command is not acted on: IRIS says it did not catch it and listens again.',
        },
        clarify_confidence: {
          type: 'number',
          minimum: 0,
          maximum: 1,
          default: 0.2,
          description: 'A spoken command under min_confidence (or over_speech_confidence) but at this confidence or above is asked about ("Did you say …?") and acted on after a yes; under it, IRIS says it did not catch it. 1 turns the question off.',
        },
        over_speech_confidence: {
          type: 'number',
          minimum: 0,
          maximum: 1,
          default: 0.7,
          description: 'A command whose wake word was heard while IRIS itself was talking (barge-in) is acted on only at this confidence or above (never below min_confidence): what is left of IRIS\'s echo makes the recogniser surer of wrong words.',
        },
        confirm_confidence: {
          type: 'number',
          minimum: 0,
          maximum: 1,
          default: 0.8,
          description: 'A spoken "yes" to a confirmation question counts only at this confidence or above.',
        },
      },
    },
    tts: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        engine: { type: 'string', enum: ['espeak-ng', 'piper'], default: 'espeak-ng', description: 'Text to speech: espeak-ng, or a Piper neural voice (falls back to espeak-ng when the voice cannot be loaded).' },
        voice: { type: 'string', default: 'en-us', description: 'espeak-ng: a voice name ("en-us"); piper: the voice\'s .onnx file (its .onnx.json beside it).' },
        speaker: { type: 'string', default: '', description: 'Piper voices with several speakers: a name or number; empty: the voice\'s default.' },
        rate_wpm: { type: 'number', minimum: 80, maximum: 450, default: 175, description: 'Speaking rate, words per minute.' },
      },
    },
    mcp: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        preload: {
          type: 'boolean',
          default: true,
          description: 'Start every enabled server at daemon start. false: a server starts at its first call (a server whose tools are not known yet starts once, in the background, to list them); with many servers this saves a Node process (≈70 MB) each.',
        },
        idle_stop_s: {
          type: 'number',
          minimum: 0,
          maximum: 86400,
          maximumReason: 'a day idle is as good as never stopping (0 says that)',
          default: 600,
          description: 'With preload = false, a server started for a call stops after this long without one (seconds); its next call starts it again. 0: never.',
        },
        connect_timeout_s: {
          type: 'number',
          exclusiveMinimum: 0,
          maximum: 600,
          maximumReason: 'a server that has not started within ten minutes will not',
          default: 5,
          description: 'Limit for starting and initialising one server (seconds).',
        },
        health_interval_s: {
          type: 'number',
          minimum: 1,
          maximum: 86_400,
          maximumReason: 'a day between pings',
          default: 30,
          description: 'Ping each running server this often for its health (iris mcp health, iris status).',
        },
        servers_file: {
          type: 'string',
          default: '',
          description: 'Optional JSON file in the common {"mcpServers": {...}} shape.',
        },
        servers: { type: 'object', additionalProperties: mcpServer, default: {}, description: 'One table per server.' },
      },
    },
  },
} as const;

/** The validated config, every default filled in, deeply frozen. */
export type Config = FromSchema<typeof configSchema>;
export type McpServerConfig = FromSchema<typeof mcpServer>;
export type SatelliteConfig = FromSchema<typeof satellite>;

/** The configured rooms, by name (the `[satellites.NAME]` tables; `discover` is not one). */
export function satelliteRooms(config: Config): Record<string, SatelliteConfig> {
  return Object.fromEntries(Object.entries(config.satellites).filter((entry): entry is [string, SatelliteConfig] => typeof entry[1] === 'object'));
}
/** One `[mcp.servers.NAME]` table; also each entry of `[mcp] servers_file`. */
export const mcpServerSchema = mcpServer;

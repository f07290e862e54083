// A C face on webrtc-audio-processing 0.3 (Debian 12's libwebrtc-audio-processing1: a C++ API
// only), so IRIS can call its echo canceller through koffi as it calls speexdsp
// (src/pipeline/webrtc-aec.ts). One state per canceller; 10 ms mono 16-bit frames.
// Built by scripts/build-webrtc-aec.sh (the package build and the tests).
#include <cstdint>
#include <cstring>
#include <new>

#include <webrtc/modules/audio_processing/include/audio_processing.h>
#include <webrtc/modules/interface/module_common_types.h>

namespace {

struct State {
  webrtc::AudioProcessing *apm;
  webrtc::AudioFrame frame;
  int rate;
  int mobile;
};

bool fill(State *st, const int16_t *samples, int count) {
  if (count != st->rate / 100) return false;  // the APM takes 10 ms frames only
  st->frame.sample_rate_hz_ = st->rate;
  st->frame.num_channels_ = 1;
  st->frame.samples_per_channel_ = count;
  std::memcpy(st->frame.data_, samples, sizeof(int16_t) * count);
  return true;
}

}  // namespace

extern "C" {

// mode: 0 = AEC (the full canceller), 1 = AECM (the mobile one). suppression: AEC 0–2 (low,
// moderate, high), AECM 0–4 (routing modes). noise: -1 off, 0–3 (low … very high).
// extended / delay_agnostic: the AEC's extended filter and its own delay estimation.
__attribute__((visibility("default"))) void *iris_aec_create(int rate, int mode, int suppression, int extended, int delay_agnostic, int noise, int high_pass) {
  webrtc::Config config;
  config.Set<webrtc::ExtendedFilter>(new webrtc::ExtendedFilter(extended != 0));
  config.Set<webrtc::DelayAgnostic>(new webrtc::DelayAgnostic(delay_agnostic != 0));
  webrtc::AudioProcessing *apm = webrtc::AudioProcessing::Create(config);
  if (!apm) return nullptr;
  apm->SetExtraOptions(config);  // the AEC reads the extended filter and delay-agnostic flags here
  bool ok = true;
  if (mode == 1) {
    ok &= apm->echo_control_mobile()->set_routing_mode(static_cast<webrtc::EchoControlMobile::RoutingMode>(suppression)) == 0;
    ok &= apm->echo_control_mobile()->Enable(true) == 0;
  } else {
    ok &= apm->echo_cancellation()->enable_drift_compensation(false) == 0;
    ok &= apm->echo_cancellation()->set_suppression_level(static_cast<webrtc::EchoCancellation::SuppressionLevel>(suppression)) == 0;
    ok &= apm->echo_cancellation()->enable_metrics(true) == 0;
    ok &= apm->echo_cancellation()->enable_delay_logging(true) == 0;
    ok &= apm->echo_cancellation()->Enable(true) == 0;
  }
  if (noise >= 0) {
    ok &= apm->noise_suppression()->set_level(static_cast<webrtc::NoiseSuppression::Level>(noise)) == 0;
    ok &= apm->noise_suppression()->Enable(true) == 0;
  }
  ok &= apm->high_pass_filter()->Enable(high_pass != 0) == 0;
  State *st = ok ? new (std::nothrow) State() : nullptr;
  if (!st) {
    delete apm;
    return nullptr;
  }
  st->apm = apm;
  st->rate = rate;
  st->mobile = mode == 1;
  return st;
}

// What the speaker played, 10 ms of it (rate / 100 samples). 0, or the APM's error code.
__attribute__((visibility("default"))) int iris_aec_reverse(void *state, const int16_t *samples, int count) {
  State *st = static_cast<State *>(state);
  if (!fill(st, samples, count)) return -6;
  return st->apm->ProcessReverseStream(&st->frame);
}

// 10 ms of microphone, cleaned in place; delay_ms: how long after the last reverse frame its
// echo reaches the microphone. 0, or the APM's error code.
__attribute__((visibility("default"))) int iris_aec_capture(void *state, int16_t *samples, int count, int delay_ms) {
  State *st = static_cast<State *>(state);
  if (!fill(st, samples, count)) return -6;
  st->apm->set_stream_delay_ms(delay_ms);
  int error = st->apm->ProcessStream(&st->frame);
  if (error == 0) std::memcpy(samples, st->frame.data_, sizeof(int16_t) * count);
  return error;
}

// out[0..3]: ERLE instant and average (dB), the AEC's delay median and deviation (ms); the AEC only.
__attribute__((visibility("default"))) int iris_aec_stats(void *state, int *out) {
  State *st = static_cast<State *>(state);
  if (st->mobile) return -1;
  webrtc::EchoCancellation::Metrics metrics;
  int error = st->apm->echo_cancellation()->GetMetrics(&metrics);
  out[0] = metrics.echo_return_loss_enhancement.instant;
  out[1] = metrics.echo_return_loss_enhancement.average;
  int median = 0, deviation = 0;
  float poor = 0;
  if (error == 0) error = st->apm->echo_cancellation()->GetDelayMetrics(&median, &deviation, &poor);
  out[2] = median;
  out[3] = deviation;
  return error;
}

__attribute__((visibility("default"))) void iris_aec_destroy(void *state) {
  State *st = static_cast<State *>(state);
  delete st->apm;
  delete st;
}

}  // extern "C"

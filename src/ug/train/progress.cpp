#include "ug/train/progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <string>

namespace ug::train {

namespace {

constexpr int kBarWidth = 30;
constexpr auto kRedrawInterval = std::chrono::milliseconds(50);

template <class... Args> std::string printf_string(const char* fmt, Args... args) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

/** Keras's durations: "7s", "1:05", "1:02:03". */
std::string duration(double seconds) {
  const auto s = static_cast<long long>(seconds);
  if (s > 3600) return printf_string("%lld:%02lld:%02lld", s / 3600, (s % 3600) / 60, s % 60);
  if (s > 60) return printf_string("%lld:%02lld", s / 60, s % 60);
  return printf_string("%llds", s);
}

std::string per_step(double seconds) {
  if (seconds >= 1) return printf_string("%.0fs/step", seconds);
  if (seconds >= 1e-3) return printf_string("%.0fms/step", seconds * 1e3);
  return printf_string("%.0fus/step", seconds * 1e6);
}

}  // namespace

Output Output::standard() {
  return {[](std::string_view s) {
            std::fwrite(s.data(), 1, s.size(), stdout);
            std::fflush(stdout);
          },
          isatty(fileno(stdout)) != 0};
}

void Output::line(std::string_view text) const {
  if (write) write(std::string(text) + "\n");
}

std::string format_logs(const Logs& logs) {
  std::string s;
  for (const auto& [name, value] : logs)
    s += (s.empty() ? "" : " - ") + name + ": " + printf_string(std::abs(value) > 1e-3 ? "%.4f" : "%.4e", value);
  return s;
}

ProgressBar::ProgressBar(const Output& out, int64_t total, int verbose)
    : out_(out), total_(total), in_place_(verbose == 1 && out.terminal), start_(Clock::now()), last_draw_(start_) {}

std::string ProgressBar::line(int64_t step, int64_t samples, const Logs& logs, bool final) const {
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  std::string s;
  if (total_ > 0) {
    const int digits = static_cast<int>(std::to_string(total_).size());
    s = printf_string("%*lld/%lld", digits, static_cast<long long>(step), static_cast<long long>(total_));
  } else {
    s = std::to_string(step) + (final ? "/" + std::to_string(step) : "/Unknown");
  }
  if (in_place_ && total_ > 0) {
    const int filled = static_cast<int>(kBarWidth * std::min<int64_t>(step, total_) / total_);
    std::string bar(filled > 0 ? filled - 1 : 0, '=');
    if (filled > 0) bar += step < total_ ? '>' : '=';
    bar += std::string(kBarWidth - std::max(filled, 0), '.');
    s += " [" + bar + "]";
  }
  const double step_time = step > 0 ? elapsed / static_cast<double>(step) : 0.0;
  if (!final) s += " - ETA: " + duration(total_ > 0 ? step_time * static_cast<double>(total_ - step) : 0.0);
  else if (in_place_) s += " - " + duration(elapsed) + " " + per_step(step_time);
  else s += " - " + duration(elapsed) + " - " + per_step(step_time);
  if (elapsed > 0 && samples > 0) s += printf_string(" - %.0f samples/s", static_cast<double>(samples) / elapsed);
  const std::string metrics = format_logs(logs);
  if (!metrics.empty()) s += " - " + metrics;
  return s;
}

void ProgressBar::update(int64_t step, int64_t samples, const Logs& logs) {
  if (!in_place_ || !out_.write || step == total_) return;  // the last step is drawn by finish
  const Clock::time_point now = Clock::now();
  if (step > 1 && now - last_draw_ < kRedrawInterval) return;
  last_draw_ = now;
  const std::string s = line(step, samples, logs, false);
  out_.write("\r" + s + std::string(last_width_ > s.size() ? last_width_ - s.size() : 0, ' '));
  last_width_ = s.size();
}

void ProgressBar::finish(int64_t steps, int64_t samples, const Logs& logs) {
  const std::string s = line(steps, samples, logs, true);
  if (!out_.write) return;
  if (in_place_) out_.write("\r" + s + std::string(last_width_ > s.size() ? last_width_ - s.size() : 0, ' ') + "\n");
  else out_.write(s + "\n");
}

}  // namespace ug::train

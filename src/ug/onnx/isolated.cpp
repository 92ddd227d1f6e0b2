#include "ug/onnx/isolated.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <stdexcept>

namespace ug::onnx {
namespace {

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

std::string read_all(int fd) {
  std::string out;
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return out;
    out.append(buffer, static_cast<size_t>(n));
  }
}

/** The child's side: one status byte ('0' returned, '1' threw), then the result or the message. */
[[noreturn]] void run_child(int fd, const std::function<std::string()>& work) {
  // The default actions, so that a crash ends the child by its signal, without the parent's
  // handlers (Python's faulthandler, a sanitizer's reporter) acting as if the parent had crashed.
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(sig, SIG_DFL);
  char status = '0';
  std::string out;
  try {
    out = work();
  } catch (const std::exception& e) {
    status = '1';
    out = e.what();
  } catch (...) {
    status = '1';
    out = "an exception that is not a std::exception";
  }
  bool written = write_all(fd, &status, 1) && write_all(fd, out.data(), out.size());
  // _exit: the parent's atexit handlers and stdio buffers are the parent's to run and flush.
  ::_exit(written ? 0 : 1);
}

}  // namespace

std::string run_isolated(const std::function<std::string()>& work) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe failed: ") + std::strerror(errno));
  pid_t pid = ::fork();
  if (pid < 0) {
    int error = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error(std::string("fork failed: ") + std::strerror(error));
  }
  if (pid == 0) {
    ::close(fds[0]);
    run_child(fds[1], work);
  }
  ::close(fds[1]);
  std::string out = read_all(fds[0]);
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (WIFSIGNALED(status))
    throw std::runtime_error(std::string("it crashed (signal ") + std::to_string(WTERMSIG(status)) + ", " +
                             strsignal(WTERMSIG(status)) + ")");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || out.empty())
    throw std::runtime_error("its process ended without a result");
  std::string result = out.substr(1);
  if (out[0] != '0') throw std::runtime_error(result);
  return result;
}

}  // namespace ug::onnx

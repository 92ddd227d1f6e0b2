// `ug launch`: a thin front over OpenMPI's mpirun. It only assembles the mpirun line (printed
// under --dry-run) and then becomes mpirun (exec), so signals, output and the exit status are
// mpirun's own.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cli.h"

namespace ug::cli {

namespace {

/** The word as a POSIX shell reads it back: quoted only where it has to be. */
std::string shell_quote(const std::string& word) {
  if (!word.empty() &&
      word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=/.,:@%") ==
          std::string::npos)
    return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::vector<std::string> mpirun_line(int64_t n, const std::string& hostfile, const std::vector<std::string>& command) {
  std::vector<std::string> line = {"mpirun", "-n", std::to_string(n)};
  // OpenMPI refuses to start as root unless told; nothing is added for other users.
  if (geteuid() == 0) line.push_back("--allow-run-as-root");
  if (!hostfile.empty()) {
    line.insert(line.end(), {"--hostfile", hostfile});
  } else if (static_cast<unsigned>(n) > std::thread::hardware_concurrency()) {
    line.push_back("--oversubscribe");  // one host, more processes than cores: MPI would refuse
  }
  line.insert(line.end(), command.begin(), command.end());
  return line;
}

int exec_mpirun(std::vector<std::string> line, bool dry_run) {
  if (dry_run) {
    std::string text;
    for (const std::string& w : line) text += (text.empty() ? "" : " ") + shell_quote(w);
    std::printf("%s\n", text.c_str());
    return 0;
  }
  std::fflush(stdout);
  std::vector<char*> argv;
  for (std::string& w : line) argv.push_back(w.data());
  argv.push_back(nullptr);
  execvp("mpirun", argv.data());
  std::fprintf(stderr, "ug: cannot run mpirun (Debian: apt-get install openmpi-bin): %s\n", std::strerror(errno));
  return 1;
}

int run_launch(const Args& args) {
  int64_t n = 0;
  std::string hostfile;
  std::string python = std::getenv("UG_PYTHON") ? std::getenv("UG_PYTHON") : "python3";
  bool dry_run = false;
  size_t i = 0;
  for (; i < args.size() && args[i].starts_with("-"); ++i) {
    std::string_view name = option_name(args[i]);
    if (name == "-n" || name == "--nproc") n = parse_int(name, option_value(args, i), 1, 1 << 20);
    else if (name == "--hostfile") hostfile = option_value(args, i);
    else if (name == "--python") python = option_value(args, i);
    else if (name == "--dry-run") dry_run = true;
    else throw UsageError("unknown option " + std::string(args[i]));
  }
  if (n == 0) throw UsageError("-n N (the number of processes) is required");
  if (i == args.size()) throw UsageError("no script to run");

  std::vector<std::string> command;
  if (args[i].ends_with(".py")) command.push_back(python);
  for (; i < args.size(); ++i) command.emplace_back(args[i]);
  return exec_mpirun(mpirun_line(n, hostfile, command), dry_run);
}

}  // namespace ug::cli

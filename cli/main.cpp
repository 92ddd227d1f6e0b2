// `ug`: the unigrad command-line program. main() only parses arguments and dispatches;
// nothing touches the library before a command runs, so `ug --version` starts at once.
#include <charconv>
#include <cstdio>
#include <exception>
#include <iostream>

#include "cli.h"
#include "data.h"
#include "ug/core/openblas.h"

namespace ug::cli {

namespace {

struct Command {
  std::string_view name;
  std::string_view summary;
  std::string_view usage;
  int (*run)(const Args&);
};

constexpr Command kCommands[] = {
    {"train", "train a built-in model (mlp, lenet, transformer) on Fashion-MNIST or given files",
     "usage: ug train [--model NAME] [--epochs N] [--batch-size N] [--optimizer NAME] [--lr X]\n"
     "                [--schedule S] [--threads T] [--workers W] [--seed S] [--out DIR] [--resume]\n"
     "                [--profile PATH] [--jit] [--nproc N [--hostfile F]]\n"
     "\n"
     "Trains the model with Keras-style fit (a progress bar on a terminal, a line per epoch\n"
     "otherwise), testing after every epoch, and writes into the output folder:\n"
     "model.safetensors (weights and architecture), checkpoint.safetensors (resumable),\n"
     "metrics.csv, logs/ (TensorBoard: tensorboard --logdir DIR/logs) and history.svg.\n"
     "\n"
     "options:\n"
     "  --model NAME        mlp (784-128-10), lenet or transformer (default mlp)\n"
     "  --epochs N          epochs to train in all (default 3)\n"
     "  --batch-size N      samples per step, over all processes (default 64)\n"
     "  --optimizer NAME    Keras's adam, adamw, sgd, rmsprop or adagrad (default adam)\n"
     "  --lr X              learning rate (default: Keras's for the optimizer, adam 1e-3)\n"
     "  --schedule S        constant, step (x0.1 at 1/2 and 3/4 of the run) or cosine\n"
     "  --threads T         threads for the kernels (default: all cores)\n"
     "  --workers W         data-loading threads (default 2; 0 loads on the training thread)\n"
     "  --seed S            seeds the initial weights and the shuffles (default 0)\n"
     "  --out DIR           output folder (default runs/<model>)\n"
     "  --resume            continue from DIR/checkpoint.safetensors up to --epochs\n"
     "  --verbose V         0 silent, 1 progress bar, 2 a line per epoch (default 1)\n"
     "  --profile PATH      write a Chrome trace of the first 5 training steps to PATH\n"
     "                      (open it in Perfetto or chrome://tracing)\n"
     "  --jit               run the training step as a compiled program (ug.jit)\n"
     "  --nproc N           train data-parallel on N processes: reruns this command under\n"
     "                      `ug launch`'s mpirun line (each process a shard of the data;\n"
     "                      rank 0 prints and writes); also active when started by mpirun\n"
     "  --hostfile F        with --nproc: the MPI hostfile of the hosts to run on\n"
     "  -h, --help          show this help\n" UG_DATA_USAGE,
     run_train},
    {"eval", "report the test accuracy and loss of a saved model",
     "usage: ug eval MODEL [--batch-size N] [data options]\n"
     "\n"
     "Evaluates MODEL (model.safetensors from `ug train`) on the test split.\n"
     "\n"
     "options:\n"
     "  --batch-size N      samples per forward pass (default 1000)\n"
     "  -h, --help          show this help\n" UG_DATA_USAGE,
     run_eval},
    {"predict", "classify test images (by index) or the images in a file with a saved model",
     "usage: ug predict MODEL [--index I [I ...]] [--file F] [data options]\n"
     "\n"
     "Prints the predicted class name of each image with its probability and, for test\n"
     "images, the true class.\n"
     "\n"
     "options:\n"
     "  --index I [I ...]   test images to classify (default 0 1 2 3 4)\n"
     "  --file F            classify the images in F (.idx/.idx.gz, .npy or .csv) instead\n"
     "  -h, --help          show this help\n" UG_DATA_USAGE,
     run_predict},
    {"serve", "serve a saved or ONNX model over HTTP (POST /predict), with batching, auth and limits",
     "usage: ug serve MODEL [--host H] [--port P] [--token-file F] [--rate R] [--burst B]\n"
     "                [--max-batch N] [--batch-wait-us U] [--max-body BYTES] [--max-queue Q]\n"
     "                [--timeout-ms T] [--threads T] [--workers W] [--http-threads N] [--no-access-log]\n"
     "\n"
     "Serves MODEL (model.safetensors from `ug train`, or an .onnx file with one float32\n"
     "input) until SIGTERM or SIGINT, then answers the requests in flight and exits 0.\n"
     "Endpoints:\n"
     "  POST /predict     {\"inputs\": [[...], ...]} (rows of the input shape, nested or flat)\n"
     "                    or raw float32 rows (Content-Type: application/octet-stream) ->\n"
     "                    {\"outputs\": [[...]], \"predictions\": [...]}, or raw float32 outputs\n"
     "                    with Accept: application/octet-stream\n"
     "  GET  /healthz     liveness (no token needed)\n"
     "  GET  /metrics     Prometheus text: requests by code, latency, batch sizes, queue depth\n"
     "  GET  /v1/model    input and output names, shapes and dtypes; the architecture\n"
     "Requests are batched: a worker runs up to --max-batch samples in one forward, waiting up\n"
     "to --batch-wait-us after the first while more requests are arriving.\n"
     "\n"
     "options:\n"
     "  --host H            address to listen on (default 127.0.0.1); any other than a loopback\n"
     "                      address needs --token-file\n"
     "  --port P            TCP port (default 8000; 0 picks a free one)\n"
     "  --token-file F      require Authorization: Bearer <the token in F> (trailing newline\n"
     "                      stripped), except on /healthz\n"
     "  --rate R            requests per second per client address (default 1000; 0 = no limit)\n"
     "  --burst B           requests a client may send at once (default: R)\n"
     "  --max-batch N       samples per forward (default 64)\n"
     "  --batch-wait-us U   longest wait for a batch to fill, in microseconds (default 200)\n"
     "  --max-body BYTES    largest request body (default 1048576)\n"
     "  --max-queue Q       requests waiting for the model before 503 (default 1024)\n"
     "  --timeout-ms T      longest time to read a request, answer it or write the answer\n"
     "                      (default 5000; a request not answered in time gets 503 or 504)\n"
     "  --threads T         threads for the kernels (default 1)\n"
     "  --workers W         threads running forwards (default 1)\n"
     "  --http-threads N    connections served at once (default 128)\n"
     "  --no-access-log     no line per request on stderr\n"
     "  -h, --help          show this help\n",
     run_serve},
    {"launch", "run a script on N processes (a thin front over OpenMPI's mpirun)",
     "usage: ug launch -n N [--hostfile F] [--python PY] [--dry-run] SCRIPT [ARGS...]\n"
     "\n"
     "Runs `mpirun -n N PY SCRIPT ARGS` (SCRIPT itself when it does not end in .py): N\n"
     "processes that join with ug.distributed.init_process_group(\"mpi\"). As root it adds\n"
     "--allow-run-as-root, which OpenMPI demands of root; on one host with more processes\n"
     "than cores, --oversubscribe.\n"
     "\n"
     "options:\n"
     "  -n, --nproc N       processes to start\n"
     "  --hostfile F        an MPI hostfile: one line per host, `name slots=K`\n"
     "  --python PY         the interpreter for .py scripts (default $UG_PYTHON or python3)\n"
     "  --dry-run           print the mpirun line instead of running it\n"
     "  -h, --help          show this help\n",
     run_launch},
    {"demo", "create, print and multiply tensors; check and time matrix products",
     "usage: ug demo [--size N] [--threads T]\n"
     "\n"
     "Creates and prints a few tensors, then multiplies square float32 matrices of\n"
     "size 64, 128, ... up to N, checks sampled rows of each product against a naive\n"
     "loop and prints the time and GFLOP/s of each size.\n"
     "\n"
     "options:\n"
     "  --size N      largest matrix size, 1..8192 (default 512)\n"
     "  --threads T   threads for kernels and OpenBLAS (default: all cores)\n"
     "  -h, --help    show this help\n",
     run_demo},
    {"env", "report the version, compiler, BLAS, SIMD level, threads and devices",
     "usage: ug env\n"
     "\n"
     "Prints what this build of unigrad runs with: version, compiler, C++ standard,\n"
     "BLAS library and its threads, the SIMD kernel set in use, the thread count and\n"
     "the devices built in.\n"
     "\n"
     "options:\n"
     "  -h, --help    show this help\n",
     run_env},
    {"summary", "print the layers, output shapes and parameter counts of a saved model",
     "usage: ug summary MODEL\n"
     "\n"
     "Prints the architecture and settings of MODEL (a .safetensors file written by\n"
     "`ug train`), then each layer with its output shape and parameter count, and the\n"
     "totals, as Keras's model.summary() does.\n"
     "\n"
     "options:\n"
     "  -h, --help    show this help\n",
     run_summary},
    {"export", "write a saved model as an ONNX file with a dynamic batch size",
     "usage: ug export MODEL OUT.onnx [--batch N] [--opset K]\n"
     "\n"
     "Traces MODEL (a .safetensors file written by `ug train`) on a random batch and\n"
     "writes it to OUT.onnx: input \"input\", output \"logits\", both with a dynamic\n"
     "batch axis named \"batch\", so the file runs at any batch size (onnxruntime, ...).\n"
     "\n"
     "options:\n"
     "  --batch N     batch size of the traced example (default 2)\n"
     "  --opset K     ONNX opset, 13..20 (default 17)\n"
     "  -h, --help    show this help\n",
     run_export},
};

void print_usage(std::FILE* out) {
  std::fprintf(out,
               "usage: ug <command> [options]\n"
               "       ug --version | --help\n"
               "\n"
               "commands:\n");
  for (const Command& c : kCommands)
    std::fprintf(out, "  %-8.*s  %.*s\n", static_cast<int>(c.name.size()), c.name.data(),
                 static_cast<int>(c.summary.size()), c.summary.data());
  std::fprintf(out, "\nRun `ug <command> --help` for a command's options.\n");
}

bool is_help(std::string_view arg) { return arg == "-h" || arg == "--help"; }

}  // namespace

std::string_view option_name(std::string_view arg) { return arg.substr(0, arg.find('=')); }

std::string_view option_value(const Args& args, size_t& i) {
  std::string_view arg = args[i];
  if (size_t eq = arg.find('='); eq != std::string_view::npos) return arg.substr(eq + 1);
  if (i + 1 >= args.size()) throw UsageError("option " + std::string(arg) + " needs a value");
  return args[++i];
}

int64_t parse_int(std::string_view option, std::string_view text, int64_t min, int64_t max) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max)
    throw UsageError(std::string(option) + " expects an integer from " + std::to_string(min) + " to " +
                     std::to_string(max) + ", got '" + std::string(text) + "'");
  return value;
}

double parse_double(std::string_view option, std::string_view text, double min, double max) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !(value >= min && value <= max))
    throw UsageError(std::string(option) + " expects a number from " + std::to_string(min) + " to " +
                     std::to_string(max) + ", got '" + std::string(text) + "'");
  return value;
}

int main(const Args& args) {
  if (args.empty()) {
    print_usage(stderr);
    return 2;
  }
  if (args[0] == "--version" || args[0] == "-V") {
    std::printf("unigrad %s\n", UG_VERSION);
    return 0;
  }
  if (is_help(args[0])) {
    print_usage(stdout);
    return 0;
  }
  const Command* cmd = nullptr;
  for (const Command& c : kCommands)
    if (c.name == args[0]) cmd = &c;
  if (!cmd) {
    std::fprintf(stderr, "ug: unknown command or option '%.*s'\n\n", static_cast<int>(args[0].size()), args[0].data());
    print_usage(stderr);
    return 2;
  }
  Args rest(args.begin() + 1, args.end());
  for (std::string_view arg : rest)
    if (is_help(arg)) {
      std::cout << cmd->usage;
      return 0;
    }
  try {
    return cmd->run(rest);
  } catch (const UsageError& e) {
    std::cerr << "ug " << cmd->name << ": " << e.what() << "\n\n" << cmd->usage;
    return 2;
  } catch (const std::exception& e) {  // a library error: report it, no stack trace
    std::cerr << "ug " << cmd->name << ": error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace ug::cli

int main(int argc, char** argv) {
  ug::rerun_with_openblas_core(argv);  // a CPU newer than OpenBLAS: its AVX-512 kernels, not SSE3
  return ug::cli::main(ug::cli::Args(argv + 1, argv + argc));
}

// `hcasim exec [--socket PATH] [--node NODE] -- COMMAND ...`: runs an unmodified program on the
// simulated HCA of node NODE of a running `hcasim serve` (docs/apps.md). The program is started
// with hcasim's libibverbs first on its library path (LD_LIBRARY_PATH), and the socket and node
// in its environment; with no server listening on the socket, one is started first from a
// scenario (the bundled default, scenarios/apps/loopback.json), which exits once the program
// has detached.
#pragma once

#include <string>
#include <vector>

namespace hcasim {

struct exec_options {
    std::string socket_path;  // default: default_socket_path()
    std::string node = "a";
    std::string scenario;  // the scenario a server started here runs
    std::string out_dir;   // that server's output folder (default out/<scenario name>)
    std::string self;      // the hcasim binary
    std::vector<std::string> command;
};

// hcasim's verbs libraries for `self` (lib/hcasim beside its folder, or $HCASIM_LIB_DIR); "" when
// they are not there.
std::string apps_library_dir(const std::string& self);

// Does not return when the program starts (it replaces this process); returns 2 for bad input,
// 3 when the server or the program could not be started.
int exec_program(const exec_options& opts);

}  // namespace hcasim

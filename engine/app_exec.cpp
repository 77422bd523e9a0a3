#include "engine/app_exec.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <thread>

#include "apps/protocol.h"
#include "engine/app_server.h"

namespace hcasim {

namespace {

bool listening(const std::string& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) return false;
    std::strcpy(addr.sun_path, path.c_str());
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const bool ok = fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    if (fd >= 0) close(fd);
    return ok;
}

// Starts `hcasim serve` in its own session (it outlives this process, which becomes the
// program) and waits until it listens.
int start_server(const exec_options& o) {
    std::vector<std::string> args = {o.self,   "serve",       o.scenario, "--socket", o.socket_path,
                                     "--once", "--idle-exit", "60",       "--quiet"};
    if (!o.out_dir.empty()) {
        args.push_back("-o");
        args.push_back(o.out_dir);
    }
    const pid_t child = fork();
    if (child < 0) return 3;
    if (child == 0) {
        // A grandchild, so that no one waits for it: the program this process becomes is not
        // its parent.
        setsid();
        if (fork() != 0) _exit(0);
        const int null = open("/dev/null", O_RDONLY);
        if (null >= 0) dup2(null, STDIN_FILENO);
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        execv(o.self.c_str(), argv.data());
        _exit(127);
    }
    waitpid(child, nullptr, 0);
    for (int i = 0; i < 3000; ++i) {
        if (listening(o.socket_path)) return 0;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::cerr << "hcasim exec: the server started for " << o.scenario << " did not listen on "
              << o.socket_path << " within 30 s\n";
    return 3;
}

}  // namespace

std::string apps_library_dir(const std::string& self) {
    namespace fs = std::filesystem;
    if (const char* env = std::getenv("HCASIM_LIB_DIR"); env && *env) return env;
    const fs::path bin = fs::path(self).parent_path();
    for (const fs::path& p : {bin / "lib/hcasim", bin / "../lib/hcasim"})
        if (fs::exists(p / "libibverbs.so.1")) return p.lexically_normal().string();
    return "";
}

int exec_program(const exec_options& given) {
    exec_options o = given;
    if (o.command.empty()) {
        std::cerr << "hcasim exec: no command (expected: hcasim exec [options] -- COMMAND ...)\n";
        return 2;
    }
    if (o.socket_path.empty()) o.socket_path = default_socket_path();
    const std::string libs = apps_library_dir(o.self);
    if (libs.empty()) {
        std::cerr << "hcasim exec: hcasim's libibverbs.so.1 is not beside " << o.self
                  << " (lib/hcasim; set HCASIM_LIB_DIR)\n";
        return 3;
    }
    if (!listening(o.socket_path)) {
        if (o.scenario.empty()) {
            std::cerr << "hcasim exec: no hcasim serve on " << o.socket_path
                      << " and no scenario to start one (--scenario FILE)\n";
            return 2;
        }
        if (int err = start_server(o)) return err;
        std::cerr << "hcasim exec: started hcasim serve " << o.scenario << " on " << o.socket_path
                  << "; its stats.json is written when the program detaches\n";
    }
    std::string path = libs;
    if (const char* old = std::getenv("LD_LIBRARY_PATH"); old && *old)
        path += std::string(":") + old;
    setenv("LD_LIBRARY_PATH", path.c_str(), 1);
    setenv(wire::env_socket, o.socket_path.c_str(), 1);
    setenv(wire::env_node, o.node.c_str(), 1);
    std::vector<char*> argv;
    for (auto& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::cerr << "hcasim exec: cannot run " << o.command[0] << ": " << std::strerror(errno) << "\n";
    return 3;
}

}  // namespace hcasim

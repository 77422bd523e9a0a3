#include "sim/output_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace hcasim {

output_file::output_file(std::string path) : m_path(std::move(path)), m_tmp(m_path + ".tmp") {
    errno = 0;
    m_out.open(m_tmp, std::ios::binary | std::ios::trunc);
    m_opened = m_out.is_open();
    m_open_errno = errno;
}

output_file::~output_file() {
    if (m_committed) return;
    if (m_out.is_open()) m_out.close();
    if (m_opened) std::remove(m_tmp.c_str());
}

bool output_file::commit(std::string& problem) {
    auto fail = [&](int err) {
        problem = "cannot write " + m_path + ": " + (err ? std::strerror(err) : "write error");
        return false;
    };
    if (!m_opened) return fail(m_open_errno);
    // A write that failed earlier left the stream bad and (most likely) its reason in errno.
    const int earlier = m_out.bad() ? errno : 0;
    errno = 0;
    m_out.close();
    if (m_out.fail()) return fail(earlier ? earlier : errno);
    if (std::rename(m_tmp.c_str(), m_path.c_str()) != 0) return fail(errno);
    m_committed = true;
    return true;
}

bool check_output_dir(const std::string& dir, std::string& problem) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
        problem = "cannot write into " + dir + ": it is a file, not a folder";
        return false;
    }
    fs::create_directories(dir, ec);
    if (ec) {
        problem = "cannot write into " + dir + ": " + ec.message();
        return false;
    }
    const std::string probe = dir + "/.hcasim-write-probe";
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        problem = "cannot write into " + dir + ": " + std::strerror(errno);
        return false;
    }
    ::close(fd);
    ::unlink(probe.c_str());
    return true;
}

bool is_plain_name(const std::string& name) {
    return !name.empty() && name.size() <= 255 && name != "." && name != ".." &&
           name.find_first_of(std::string("/\0", 2)) == std::string::npos;
}

}  // namespace hcasim

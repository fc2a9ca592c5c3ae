// Errors raised by the receiver. Each one names its cause so that the Python
// exception it becomes is actionable without reading the C++ source.
#pragma once

#include <cerrno>
#include <stdexcept>
#include <string>

namespace casper400g_rx {

// An operating-system call failed; carries errno so Python raises the matching
// OSError subclass (PermissionError, ...).
class os_error : public std::runtime_error {
public:
    os_error(int err, const std::string &what);
    int code() const noexcept { return code_; }

private:
    int code_;
};

// Throws os_error for the current errno, prefixed with what was being done.
[[noreturn]] void throw_errno(const std::string &doing, int err = errno);

}  // namespace casper400g_rx

// What the kernel says about NICs through sysfs (/sys/class/net, /sys/class/infiniband).
#pragma once

#include <dirent.h>

#include <fstream>
#include <string>
#include <vector>

namespace casper400g_rx {

// The first line of a sysfs attribute, without trailing blanks; "" when it cannot be read.
inline std::string sysfs_read(const std::string &path) {
    std::ifstream f(path);
    std::string s;
    std::getline(f, s);
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

// The entries of a sysfs directory (none when it does not exist).
inline std::vector<std::string> sysfs_list(const std::string &path) {
    std::vector<std::string> out;
    if (DIR *d = opendir(path.c_str())) {
        while (dirent *e = readdir(d))
            if (e->d_name[0] != '.') out.emplace_back(e->d_name);
        closedir(d);
    }
    return out;
}

}  // namespace casper400g_rx

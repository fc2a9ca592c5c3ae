# Stand-in for the Vivado IP-integrator commands a block-design script uses, for tclsh.
#
# Usage: tclsh vivado_bd_stub.tcl <script.tcl> <log>
#
# Every call is recorded in <log>, one tab-separated record per line:
#   design <name> | current <name> | cell <name> <vlnv> | port <name> <dir> <width> <type> |
#   intf_port <name> <mode> <vlnv> | prop <object> <NAME> <value> |
#   net <object> <object>... | intf_net <object> <object> | cmd <command> <args...>
# (assign_bd_address records its arguments: -offset, -range, the address space and segment;
# `current` is a switch back to a design created before.)
# Objects are written kind:name (cell:x, port:x, pin:cell/pin, intf_pin:cell/pin,
# intf_port:x). A reference to a cell or port that was never created, a second cell of the
# same name, an odd -dict list or a connection of fewer than two objects is an error, so a
# typo in the script fails here as it would in Vivado.

if {[llength $argv] != 2} {
    puts stderr "usage: tclsh vivado_bd_stub.tcl <script.tcl> <log>"
    exit 2
}
set ::log [open [lindex $argv 1] w]
set ::design ""
array set ::cells {}
array set ::ports {}
array set ::intf_ports {}

proc rec {args} { puts $::log [join $args "\t"] }

proc opts {argl spec} {
    # spec: list of option names taking a value; returns dict of options + "rest".
    set out [dict create]
    set rest {}
    for {set i 0} {$i < [llength $argl]} {incr i} {
        set a [lindex $argl $i]
        if {[lsearch -exact $spec $a] >= 0} {
            incr i
            dict set out $a [lindex $argl $i]
        } elseif {[string index $a 0] eq "-"} {
            dict set out $a 1
        } else {
            lappend rest $a
        }
    }
    dict set out rest $rest
    return $out
}

# A project may hold several block designs: each create_bd_design starts a new one (its
# cells and ports are its own) and makes it current; current_bd_design switches back to one
# that exists (recorded as "current <name>"). Objects are looked up in the current design.
array set ::designs {}
proc create_bd_design {name} {
    if {[info exists ::designs($name)]} { error "create_bd_design: design $name exists" }
    set ::design $name
    set ::designs($name) 1
    rec design $name
    return $name
}
proc get_bd_designs {name} {
    if {![info exists ::designs($name)]} { error "get_bd_designs: no design $name" }
    return $name
}
proc current_bd_design {args} {
    if {[llength $args]} {
        set name [lindex $args 0]
        if {![info exists ::designs($name)]} { error "current_bd_design: no design $name" }
        if {$name ne $::design} {
            set ::design $name
            rec current $name
        }
    }
    return $::design
}
# Key of an object of the current design.
proc k {name} { return "$::design/$name" }
proc save_bd_design {args} { rec cmd save_bd_design {*}$args }
proc create_bd_cell {args} {
    set o [opts $args {-type -vlnv}]
    set name [lindex [dict get $o rest] 0]
    if {[info exists ::cells([k $name])]} { error "create_bd_cell: cell $name exists" }
    if {![dict exists $o -vlnv] && [dict get $o -type] eq "ip"} {
        error "create_bd_cell: ip cell $name without -vlnv"
    }
    set ::cells([k $name]) [dict get $o -vlnv]
    rec cell $name [dict get $o -vlnv]
    return "cell:$name"
}
proc create_bd_port {args} {
    set o [opts $args {-dir -from -to -type}]
    set name [lindex [dict get $o rest] 0]
    if {[info exists ::ports([k $name])]} { error "create_bd_port: port $name exists" }
    set width 1
    if {[dict exists $o -from]} { set width [expr {[dict get $o -from] - [dict get $o -to] + 1}] }
    set type data
    if {[dict exists $o -type]} { set type [dict get $o -type] }
    set ::ports([k $name]) 1
    rec port $name [dict get $o -dir] $width $type
    return "port:$name"
}
proc create_bd_intf_port {args} {
    set o [opts $args {-mode -vlnv}]
    set name [lindex [dict get $o rest] 0]
    if {[info exists ::intf_ports([k $name])]} { error "create_bd_intf_port: port $name exists" }
    set ::intf_ports([k $name]) 1
    rec intf_port $name [dict get $o -mode] [dict get $o -vlnv]
    return "intf_port:$name"
}
proc need_cell {path what} {
    set cell [lindex [split $path /] 0]
    if {![info exists ::cells([k $cell])]} { error "$what: no cell $cell (for $path)" }
}
proc get_bd_cells {name} { need_cell $name get_bd_cells; return "cell:$name" }
proc get_bd_pins {path} { need_cell $path get_bd_pins; return "pin:$path" }
proc get_bd_intf_pins {path} { need_cell $path get_bd_intf_pins; return "intf_pin:$path" }
proc get_bd_ports {name} {
    if {![info exists ::ports([k $name])]} { error "get_bd_ports: no port $name" }
    return "port:$name"
}
proc get_bd_intf_ports {name} {
    if {![info exists ::intf_ports([k $name])]} { error "get_bd_intf_ports: no port $name" }
    return "intf_port:$name"
}
proc set_property {args} {
    if {[lindex $args 0] eq "-dict"} {
        set d [lindex $args 1]
        set objs [lrange $args 2 end]
    } else {
        set d [list [lindex $args 0] [lindex $args 1]]
        set objs [lrange $args 2 end]
    }
    if {[llength $d] % 2} { error "set_property: odd -dict list" }
    if {![llength $objs]} { error "set_property: no object" }
    foreach obj $objs {
        foreach {k v} $d { rec prop $obj $k $v }
    }
}
proc connect_bd_net {args} {
    set o [opts $args {-net}]
    set objs [dict get $o rest]
    if {[llength $objs] < 2} { error "connect_bd_net: fewer than two objects: $objs" }
    foreach obj $objs {
        if {![regexp {^(pin|port):} $obj]} { error "connect_bd_net: $obj is not a pin or port" }
    }
    rec net {*}$objs
}
proc connect_bd_intf_net {args} {
    set o [opts $args {-intf_net}]
    set objs [dict get $o rest]
    if {[llength $objs] != 2} { error "connect_bd_intf_net: needs two objects: $objs" }
    foreach obj $objs {
        if {![regexp {^intf_(pin|port):} $obj]} {
            error "connect_bd_intf_net: $obj is not an interface pin or port"
        }
    }
    rec intf_net {*}$objs
}
proc get_bd_addr_spaces {path} { need_cell $path get_bd_addr_spaces; return "addr_space:$path" }
proc get_bd_addr_segs {path} {
    set top [lindex [split $path /] 0]
    if {![info exists ::cells([k $top])] && ![info exists ::intf_ports([k $top])]} {
        error "get_bd_addr_segs: no cell or interface port $top (for $path)"
    }
    return "addr_seg:$path"
}
proc get_files {args} { return "file:[lindex $args end]" }
# Project-level commands of a build script's init stage (recorded; objects as text).
proc current_project {args} { return "project:casper400g" }
proc current_fileset {args} { return "fileset:sources_1" }
proc get_property {name obj} {
    if {$name eq "DIRECTORY" && $obj eq "project:casper400g"} { return "/project" }
    error "get_property: $name of $obj is not modelled"
}
foreach c {create_project add_files} {
    proc $c {args} "rec cmd $c {*}\$args"
}
foreach c {assign_bd_address validate_bd_design generate_target} {
    proc $c {args} "rec cmd $c {*}\$args"
}
# make_wrapper returns the wrapper's file, as Vivado's does.
proc make_wrapper {args} {
    rec cmd make_wrapper {*}$args
    set o [opts $args {-files}]
    regexp {^file:(.*)\.bd$} [dict get $o -files] -> bd
    return "/project/wrappers/${bd}_wrapper.v"
}

# VIVADO_STUB_ANY=1: a whole project script (mlib_devel's gogogo.tcl) rather than block-design
# Tcl. Every other Vivado command is recorded ("cmd ...") and returns an empty result;
# project paths resolve under /project; file copies and directory changes are recorded,
# not done (a copy of a file that exists is made: the image a stand-in Vivado left). Tcl itself still checks the script: an undefined variable or a malformed
# command fails the run as it would in Vivado.
if {[info exists ::env(VIVADO_STUB_ANY)]} {
    proc unknown {args} { rec cmd {*}$args; return "" }
    rename get_property _bd_get_property
    proc get_property {name obj} {
        if {[string tolower $name] eq "directory"} { return "/project" }
        rec cmd get_property $name $obj
        return ""
    }
    rename file _tcl_file
    proc file {sub args} {
        if {$sub in {copy delete rename mkdir}} {
            rec cmd file $sub {*}$args
            # A copy of a file that exists (an image the stand-in Vivado left) is made.
            if {$sub eq "copy" && [_tcl_file exists [lindex $args end-1]]} {
                _tcl_file copy {*}$args
            }
            return ""
        }
        return [_tcl_file $sub {*}$args]
    }
    proc cd {dir} { rec cmd cd $dir }
}

source [lindex $argv 0]
close $::log

//! Every exit status qwrap gives of its own (the command's own status
//! passes through unchanged), in one place.

/// A report's check failed (`verify`, `receipt --verify`): the output says
/// which. bwrap mode's own failures too, as bubblewrap's.
pub const FAILED: u8 = 1;
/// The command line, a setting or a config file is wrong.
pub const USAGE: u8 = 2;
/// qwrap failed or refused before the command ran: the command never ran.
pub const SETUP: u8 = 125;
/// The command was found but could not be executed.
pub const NOT_EXECUTABLE: u8 = 126;
/// The command was not found.
pub const NOT_FOUND: u8 = 127;

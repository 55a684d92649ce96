//! Short password options of well-known programs. A short option means a password only for the
//! program that defines it: `-p` is mysql's password but ssh's and docker's port, so these rules
//! apply only to the arguments after the program's own name (`mysql`, `/usr/bin/mysqldump`,
//! `sudo sshpass …`).

/// How a password option's value is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape {
    /// The value is the password (`sshpass -p PASS`, `mysql -pPASS`).
    Password,
    /// `USER:PASSWORD`: the part after the first `:` is the password (`curl -u user:pass`).
    UserPassword,
}

/// One program's password option.
struct Rule {
    /// The program names (the last component of its path).
    programs: &'static [&'static str],
    /// The option.
    flag: &'static str,
    /// Whether the value may be glued to the option (`-pPASS`).
    glued: bool,
    /// What the value holds.
    shape: Shape,
}

const MYSQL: &[&str] = &[
    "mysql",
    "mysqldump",
    "mysqladmin",
    "mysqlimport",
    "mysqlcheck",
    "mysqlshow",
    "mysqlpump",
    "mysqlslap",
    "mysqlbinlog",
    "mysqlsh",
    "mariadb",
    "mariadb-dump",
    "mariadb-admin",
    "mariadb-import",
    "mariadb-check",
];

const MONGO: &[&str] = &[
    "mongo",
    "mongosh",
    "mongodump",
    "mongorestore",
    "mongoexport",
    "mongoimport",
];

const LDAP: &[&str] = &[
    "ldapsearch",
    "ldapmodify",
    "ldapadd",
    "ldapdelete",
    "ldapwhoami",
    "ldappasswd",
];

const RULES: &[Rule] = &[
    Rule {
        programs: MYSQL,
        flag: "-p",
        glued: true,
        shape: Shape::Password,
    },
    Rule {
        programs: &["sshpass"],
        flag: "-p",
        glued: true,
        shape: Shape::Password,
    },
    Rule {
        programs: &["redis-cli"],
        flag: "-a",
        glued: false,
        shape: Shape::Password,
    },
    Rule {
        programs: MONGO,
        flag: "-p",
        glued: false,
        shape: Shape::Password,
    },
    Rule {
        programs: &["sqlcmd", "bcp"],
        flag: "-P",
        glued: false,
        shape: Shape::Password,
    },
    Rule {
        programs: LDAP,
        flag: "-w",
        glued: false,
        shape: Shape::Password,
    },
    Rule {
        programs: &["zip", "unzip"],
        flag: "-P",
        glued: false,
        shape: Shape::Password,
    },
    Rule {
        programs: &["7z", "7za", "7zr", "rar", "unrar"],
        flag: "-p",
        glued: true,
        shape: Shape::Password,
    },
    Rule {
        programs: &["openssl"],
        flag: "-k",
        glued: false,
        shape: Shape::Password,
    },
    Rule {
        programs: &["curl"],
        flag: "-u",
        glued: true,
        shape: Shape::UserPassword,
    },
    Rule {
        programs: &["curl"],
        flag: "--user",
        glued: false,
        shape: Shape::UserPassword,
    },
    Rule {
        programs: &["curl"],
        flag: "-U",
        glued: true,
        shape: Shape::UserPassword,
    },
    Rule {
        programs: &["curl"],
        flag: "--proxy-user",
        glued: false,
        shape: Shape::UserPassword,
    },
];

/// A program some rule knows, by the last component of `word`'s path.
pub(super) fn program(word: &str) -> Option<&'static str> {
    let name = word.rsplit('/').next().unwrap_or(word);
    RULES
        .iter()
        .flat_map(|r| r.programs.iter())
        .find(|p| **p == name)
        .copied()
}

/// Whether `program` runs a command given after its own options (`sshpass -p X ssh -p 22 h`).
pub(super) fn wraps(program: &str) -> bool {
    program == "sshpass"
}

/// What `word`, an argument of `program`, says about a password.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flag {
    /// The option alone: the password is the next argument.
    Next(Shape),
    /// The option with its value glued on after `at` bytes.
    Glued(usize, Shape),
}

/// Whether `word` is one of `program`'s password options.
pub(super) fn flag(program: &str, word: &str) -> Option<Flag> {
    let rules = RULES.iter().filter(|r| r.programs.contains(&program));
    for r in rules {
        if word == r.flag {
            return Some(Flag::Next(r.shape));
        }
        if r.glued && word.len() > r.flag.len() && word.starts_with(r.flag) {
            return Some(Flag::Glued(r.flag.len(), r.shape));
        }
    }
    None
}

use super::*;
use proptest::prelude::*;

const R: &str = REDACTED;

/// Each row: an argv written with spaces between elements and `|` inside one element where it
/// holds spaces, and what it must become. `{R}` is the marker.
const TABLE: &[(&str, &str)] = &[
    // Option forms.
    ("train --token XYZZY", "train --token {R}"),
    ("train --token=XYZZY", "train --token={R}"),
    ("train --token:XYZZY", "train --token:{R}"),
    ("train -token XYZZY", "train -token {R}"),
    ("train -password=XYZZY", "train -password={R}"),
    ("train token=XYZZY", "train token={R}"),
    ("train token:XYZZY", "train token:{R}"),
    ("train --password=a,b=c", "train --password={R}"),
    (
        "train --password -XYZZY --epochs 3",
        "train --password {R} --epochs 3",
    ),
    ("train --password correct|horse", "train --password {R}"),
    ("train --use-auth --token XYZZY", "train --use-auth {R} {R}"),
    // Spellings of the names.
    ("x --hf-token XYZZY", "x --hf-token {R}"),
    ("x --hf_token=XYZZY", "x --hf_token={R}"),
    ("x --HF-TOKEN XYZZY", "x --HF-TOKEN {R}"),
    ("x --accessToken XYZZY", "x --accessToken {R}"),
    ("x --api-key XYZZY", "x --api-key {R}"),
    ("x --api_key XYZZY", "x --api_key {R}"),
    ("x --apikey XYZZY", "x --apikey {R}"),
    ("x --apiKey=XYZZY", "x --apiKey={R}"),
    ("x --access-key XYZZY", "x --access-key {R}"),
    ("x --private_key XYZZY", "x --private_key {R}"),
    ("x --secret-key XYZZY", "x --secret-key {R}"),
    ("x --key XYZZY", "x --key {R}"),
    ("x --passwd XYZZY", "x --passwd {R}"),
    ("x --pwd XYZZY", "x --pwd {R}"),
    ("x --pass XYZZY", "x --pass {R}"),
    ("x --db-password XYZZY", "x --db-password {R}"),
    ("x --secret XYZZY", "x --secret {R}"),
    ("x --client-secret XYZZY", "x --client-secret {R}"),
    ("x --clientSecret=XYZZY", "x --clientSecret={R}"),
    ("x clientSecret:XYZZY", "x clientSecret:{R}"),
    ("x --passphrase XYZZY", "x --passphrase {R}"),
    ("x --jwt XYZZY", "x --jwt {R}"),
    ("x --jwt-token=XYZZY", "x --jwt-token={R}"),
    ("x --credential XYZZY", "x --credential {R}"),
    ("x --credentials=XYZZY", "x --credentials={R}"),
    ("x --auth XYZZY", "x --auth {R}"),
    ("x --authorization XYZZY", "x --authorization {R}"),
    ("x --session XYZZY", "x --session {R}"),
    ("x --session-id=XYZZY", "x --session-id={R}"),
    ("x --cookie XYZZY", "x --cookie {R}"),
    ("x --bearer XYZZY", "x --bearer {R}"),
    ("x --pat XYZZY", "x --pat {R}"),
    // Variables.
    (
        "env AWS_SECRET_ACCESS_KEY=XYZZY x",
        "env AWS_SECRET_ACCESS_KEY={R} x",
    ),
    ("env HF_TOKEN=XYZZY x", "env HF_TOKEN={R} x"),
    ("env WANDB_API_KEY=XYZZY x", "env WANDB_API_KEY={R} x"),
    ("env GITHUB_TOKEN=XYZZY x", "env GITHUB_TOKEN={R} x"),
    (
        "env HUGGING_FACE_HUB_TOKEN=XYZZY x",
        "env HUGGING_FACE_HUB_TOKEN={R} x",
    ),
    (
        "env AWS_SESSION_TOKEN=XYZZY x",
        "env AWS_SESSION_TOKEN={R} x",
    ),
    ("env PGPASSWORD=XYZZY x", "env PGPASSWORD={R} x"),
    ("env MYSQL_PWD=XYZZY x", "env MYSQL_PWD={R} x"),
    ("env SSHPASS=XYZZY x", "env SSHPASS={R} x"),
    ("env STRIPE_KEY=XYZZY x", "env STRIPE_KEY={R} x"),
    // Later keys of one argument.
    ("x --opt=a=b,token=XYZZY", "x --opt=a=b,token={R}"),
    ("x --opt=a=b,token=XYZZY,c=d", "x --opt=a=b,token={R},c=d"),
    (
        "x --cfg={\"password\":\"XYZZY\"}",
        "x --cfg={\"password\":\"{R}\"}",
    ),
    (
        "x https://h/api?user=u&api_key=XYZZY&q=1",
        "x https://h/api?user=u&api_key={R}&q=1",
    ),
    // URLs.
    (
        "x --db=postgres://admin:XYZZY@db:5432/x",
        "x --db=postgres://admin:{R}@db:5432/x",
    ),
    (
        "x https://user:XY/ZZ/Y@example.com/path",
        "x https://user:{R}@example.com/path",
    ),
    (
        "x https://user:XY@ZZY@example.com/",
        "x https://user:{R}@example.com/",
    ),
    ("x redis://:XYZZY@cache:6379", "x redis://:{R}@cache:6379"),
    (
        "git clone https://ghp_XYZZY@github.com/o/r",
        "git clone https://{R}@github.com/o/r",
    ),
    (
        "git clone ssh://git@github.com/o/r",
        "git clone ssh://git@github.com/o/r",
    ),
    (
        "npm i https://registry.npmjs.org/@types/node",
        "npm i https://registry.npmjs.org/@types/node",
    ),
    // HTTP credentials.
    (
        "curl -H Authorization:|Bearer|XYZZY h",
        "curl -H Authorization:|Bearer|{R} h",
    ),
    (
        "curl -H Authorization: Bearer XYZZY h",
        "curl -H Authorization: Bearer {R} h",
    ),
    (
        "curl -H Authorization:Bearer XYZZY h",
        "curl -H Authorization:Bearer {R} h",
    ),
    (
        "curl --header=Authorization:|Basic|XYZZY h",
        "curl --header=Authorization:|Basic|{R} h",
    ),
    ("curl -H X-Api-Key:|XYZZY h", "curl -H X-Api-Key:|{R} h"),
    ("curl -H Cookie:|session=XYZZY h", "curl -H Cookie:|{R} h"),
    ("x Bearer XYZZY", "x Bearer {R}"),
    // Programs' own password options.
    ("mysql -u root -pXYZZY db", "mysql -u root -p{R} db"),
    ("mysql -u root -p XYZZY", "mysql -u root -p {R}"),
    (
        "/usr/bin/mysqldump -pXYZZY db",
        "/usr/bin/mysqldump -p{R} db",
    ),
    (
        "sudo sshpass -p XYZZY ssh -p 22 h",
        "sudo sshpass -p {R} ssh -p 22 h",
    ),
    ("sshpass -p -XYZZY ssh h", "sshpass -p {R} ssh h"),
    ("redis-cli -a XYZZY ping", "redis-cli -a {R} ping"),
    ("curl -u alice:XYZZY h", "curl -u alice:{R} h"),
    ("curl -ualice:XYZZY h", "curl -ualice:{R} h"),
    ("openssl enc -pass pass:XYZZY", "openssl enc -pass {R}"),
    (
        "openssl enc -passin pass:XYZZY",
        "openssl enc -passin pass:{R}",
    ),
    ("7z a -pXYZZY x.7z", "7z a -p{R} x.7z"),
    // A title rewritten into one element (setproctitle).
    (
        "python|train.py|--api-key|XYZZY|--lr|0.1",
        "python|train.py|--api-key|{R}|--lr|0.1",
    ),
    (
        "python|train.py|--hf-token=XYZZY",
        "python|train.py|--hf-token={R}",
    ),
    ("mysql|-pXYZZY|db", "mysql|-p{R}|db"),
    // Not secrets.
    ("x --tokenizer gpt2", "x --tokenizer gpt2"),
    ("x --author x", "x --author x"),
    ("x --port 8080", "x --port 8080"),
    ("x --passes 3", "x --passes 3"),
    (
        "x --max-tokens 512 --max_new_tokens=64",
        "x --max-tokens 512 --max_new_tokens=64",
    ),
    (
        "x --pad-token-id 0 --eos-token </s>",
        "x --pad-token-id 0 --eos-token </s>",
    ),
    (
        "x --token-file /run/t --secret-name k8s",
        "x --token-file /run/t --secret-name k8s",
    ),
    (
        "x --auth-type basic --password-file /p",
        "x --auth-type basic --password-file /p",
    ),
    (
        "x --no-password --disable-auth --verbose",
        "x --no-password --disable-auth --verbose",
    ),
    (
        "x --sort-key name --keep --keyboard us",
        "x --sort-key name --keep --keyboard us",
    ),
    ("docker run -p 8080:80 img", "docker run -p 8080:80 img"),
    ("ssh -p 22 h", "ssh -p 22 h"),
    (
        "python -m http.server -p 8000",
        "python -m http.server -p 8000",
    ),
    (
        "env PWD=/home/a OLDPWD=/tmp x",
        "env PWD=/home/a OLDPWD=/tmp x",
    ),
    (
        "x MASTER_ADDR=node1:29500 --lr=0.1",
        "x MASTER_ADDR=node1:29500 --lr=0.1",
    ),
    (
        "x https://example.com:8443/a?b=c",
        "x https://example.com:8443/a?b=c",
    ),
];

fn parse(row: &str) -> Vec<String> {
    row.replace("{R}", R)
        .split(' ')
        .map(|e| e.replace('|', " "))
        .collect()
}

#[test]
fn every_spelling_in_the_table() {
    let mut wrong = Vec::new();
    for (input, expected) in TABLE {
        let got = argv(&parse(input));
        if got != parse(expected) {
            wrong.push(format!("{input}\n  got  {got:?}\n  want {expected}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_argument_count_stays() {
    for (input, _) in TABLE {
        assert_eq!(argv(&parse(input)).len(), parse(input).len(), "{input}");
    }
}

#[test]
fn a_joined_command_line_reads_as_words() {
    assert_eq!(
        line("python train.py --api-key XYZZY --lr 0.1"),
        format!("python train.py --api-key {R} --lr 0.1")
    );
    assert_eq!(line("python train.py"), "python train.py");
}

#[test]
fn environment_values() {
    assert_eq!(env_value("HF_TOKEN", "hf_abc"), R);
    assert_eq!(env_value("WANDB_API_KEY", "k"), R);
    assert_eq!(
        env_value("NCCL_SOCKET_IFNAME", "eth0"),
        "eth0",
        "an allow-listed name keeps its value"
    );
    assert_eq!(
        env_value("REGISTRY", "https://u:pw@r.example"),
        format!("https://u:{R}@r.example")
    );
}

#[test]
fn a_ledger_is_redacted_in_place() {
    let mut l = Ledger::default();
    let mut p = crate::ledger::ProcessRow {
        cmdline: vec!["x".into(), "--token".into(), "XYZZY".into()],
        ..Default::default()
    };
    p.env.insert("HF_TOKEN".into(), "hf_XYZZY".into());
    p.env.insert("RANK".into(), "3".into());
    l.processes.push(p);
    ledger(&mut l);
    let p = &l.processes[0];
    assert_eq!(p.cmdline, ["x", "--token", R]);
    assert_eq!(p.env["HF_TOKEN"], R);
    assert_eq!(p.env["RANK"], "3");
}

/// Secrets as users type them: with `/`, `-` first, dots, plus signs, percent signs.
fn secret() -> impl Strategy<Value = String> {
    "-?[A-Za-z0-9][A-Za-z0-9._~+/!%^-]{7,23}"
}

proptest! {
    #[test]
    fn no_secret_survives_any_spelling(secret in secret()) {
        for (input, expected) in TABLE.iter().filter(|(i, _)| i.contains("XYZZY")) {
            let template = input.replace("XYZZY", "");
            prop_assume!(!template.contains(&secret) && !R.contains(&secret));
            let given = parse(&input.replace("XYZZY", &secret));
            let joined = argv(&given).join(" ");
            prop_assert!(!joined.contains(&secret), "{input} -> {joined} (table: {expected})");
            prop_assert_eq!(argv(&given).len(), given.len());
            let as_line = line(&given.join(" ")).into_owned();
            prop_assert!(!as_line.contains(&secret), "{input} as one line -> {as_line}");
        }
    }
}

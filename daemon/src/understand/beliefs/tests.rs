//! The rules against sentences written for them: each line is a text and every belief it must
//! yield, as `subject|predicate|object|type` (`!` before the object: negated); an empty list
//! means the text states no belief.

use super::*;

const CASES: &[(&str, &[&str])] = &[
    // activities
    (
        "I'm doing kickboxing and it's giving me so much energy.",
        &["user|does|kickboxing|behavior"],
    ),
    (
        "I'm off to do some taekwondo!",
        &["user|does|taekwondo|behavior"],
    ),
    (
        "I practise yoga every morning.",
        &["user|does|yoga|behavior"],
    ),
    ("I'm doing great, thanks!", &[]),
    ("I'm going to do more ads.", &["user|goal|do more ads|goal"]),
    // a goal that points back names nothing
    ("I want to continue doing it.", &[]),
    // identity
    (
        "My name is Alex Moreau.",
        &["user|name|Alex Moreau|identity"],
    ),
    ("Hi, I'm Sam", &["user|name|Sam|identity"]),
    ("Call me Jo.", &["user|name|Jo|identity"]),
    ("I'm 34 years old.", &["user|age|34|identity"]),
    ("I just turned 40!", &["user|age|40|identity"]),
    (
        "My pronouns are they/them.",
        &["user|pronouns|they/them|identity"],
    ),
    (
        "I'm a software engineer.",
        &["user|occupation|software engineer|identity"],
    ),
    (
        "I am a nurse at St Mary's Hospital",
        &[
            "user|occupation|nurse|identity",
            "user|works_at|St Mary's Hospital|identity",
        ],
    ),
    (
        "I work as a data scientist.",
        &["user|occupation|data scientist|identity"],
    ),
    (
        "I'm not a developer, I'm a designer.",
        &[
            "user|occupation|!developer|identity",
            "user|occupation|designer|identity",
        ],
    ),
    (
        "I work at Acme Corp.",
        &["user|works_at|Acme Corp|identity"],
    ),
    (
        "I work for the city council now",
        &["user|works_at|the city council|identity"],
    ),
    ("I just joined Google!", &["user|works_at|Google|identity"]),
    (
        "I don't work at Acme anymore.",
        &["user|works_at|!Acme|identity"],
    ),
    ("I live in Lisbon.", &["user|lives_in|Lisbon|identity"]),
    (
        "I've lived in Toronto for ten years.",
        &["user|lives_in|Toronto|identity"],
    ),
    (
        "I have been living in Oslo since 2019",
        &["user|lives_in|Oslo|identity"],
    ),
    (
        "I work remotely for Shopify.",
        &["user|works_at|Shopify|identity"],
    ),
    (
        "I live in Porto and I work at Farfetch.",
        &[
            "user|lives_in|Porto|identity",
            "user|works_at|Farfetch|identity",
        ],
    ),
    (
        "We finally moved! I moved to Berlin last month.",
        &["user|lives_in|Berlin|identity"],
    ),
    (
        "I no longer live in Paris.",
        &["user|lives_in|!Paris|identity"],
    ),
    (
        "I'm from Brazil originally, but I love it here.",
        &["user|from|Brazil|identity"],
    ),
    (
        "I speak French and Spanish.",
        &[
            "user|speaks|French|identity",
            "user|speaks|Spanish|identity",
        ],
    ),
    ("I don't speak German.", &["user|speaks|!German|identity"]),
    (
        "My birthday is March 3rd.",
        &["user|birthday|March 3rd|identity"],
    ),
    ("I'm married to Chris.", &["user|married_to|Chris|identity"]),
    // preferences
    ("I love tea.", &["user|tea|like|preference"]),
    (
        "I really enjoy hiking in the mountains",
        &["user|hiking in the mountains|like|preference"],
    ),
    ("I hate cilantro.", &["user|cilantro|dislike|preference"]),
    (
        "I really don't like mushrooms.",
        &["user|mushrooms|dislike|preference"],
    ),
    (
        "I don't like horror movies.",
        &["user|horror movies|dislike|preference"],
    ),
    (
        "I can't stand loud music",
        &["user|loud music|dislike|preference"],
    ),
    (
        "I prefer tabs over spaces.",
        &[
            "user|tabs|prefer|preference",
            "user|spaces|avoid|preference",
        ],
    ),
    (
        "I prefer spaces for indentation.",
        &["user|indentation|spaces|preference"],
    ),
    (
        "Use pnpm instead of npm.",
        &["user|pnpm|prefer|preference", "user|npm|avoid|preference"],
    ),
    (
        "My favorite color is green.",
        &["user|favorite color|green|preference"],
    ),
    (
        "Jazz is my favourite genre",
        &["user|favorite genre|Jazz|preference"],
    ),
    (
        "I'm a big fan of sci-fi novels.",
        &["user|sci-fi novels|like|preference"],
    ),
    (
        "I'm not into football.",
        &["user|football|dislike|preference"],
    ),
    (
        "I like to paint on weekends.",
        &["user|paint on weekends|like|preference"],
    ),
    ("I love you!", &[]),
    // corrections and rules
    (
        "Never call it \u{201c}a quick fix\u{201d}.",
        &["user|call it \u{201c}a quick fix\u{201d}|never|rule"],
    ),
    ("Never use emojis.", &["user|use emojis|never|rule"]),
    (
        "Please don't add comments to every line.",
        &["user|add comments to every line|never|rule"],
    ),
    (
        "Always write tests first.",
        &["user|write tests first|always|rule"],
    ),
    (
        "Please stop apologizing so much.",
        &["user|apologizing|never|rule"],
    ),
    ("Don't worry about it!", &[]),
    ("Don't forget the milk.", &[]),
    // behaviour
    (
        "I always run in the morning.",
        &["user|run in the morning|always|behavior"],
    ),
    ("I never knew that!", &[]),
    // constraints
    (
        "I'm allergic to peanuts.",
        &["user|allergic_to|peanuts|constraint"],
    ),
    (
        "I am allergic to shellfish and eggs",
        &[
            "user|allergic_to|shellfish|constraint",
            "user|allergic_to|eggs|constraint",
        ],
    ),
    ("I'm vegetarian.", &["user|diet|vegetarian|constraint"]),
    (
        "I'm lactose intolerant",
        &["user|condition|lactose intolerant|constraint"],
    ),
    ("I can't drive.", &["user|cannot|drive|constraint"]),
    ("I can't wait to see you!", &[]),
    ("I can't believe it worked", &[]),
    (
        "The report is due on Friday.",
        &["user|deadline|The report due on Friday|constraint"],
    ),
    (
        "The deadline for the grant is May 1st.",
        &["user|deadline|the grant due May 1st|constraint"],
    ),
    (
        "I have to finish the slides by Thursday.",
        &["user|deadline|finish the slides due Thursday|constraint"],
    ),
    // goals
    (
        "I want to learn to surf.",
        &["user|goal|learn to surf|goal"],
    ),
    (
        "I'm planning to run a marathon next year.",
        &["user|goal|run a marathon next year|goal"],
    ),
    (
        "My goal is to read 30 books this year.",
        &["user|goal|read 30 books this year|goal"],
    ),
    ("I'd like to visit Japan.", &["user|goal|visit Japan|goal"]),
    (
        "I'm learning Portuguese.",
        &["user|goal|learn Portuguese|goal"],
    ),
    ("I want to say thank you.", &[]),
    ("I don't want to move again.", &["user|goal|!move|goal"]),
    // third person
    ("Maria is my sister.", &["Maria|relation|sister|fact"]),
    ("Tom is my best friend.", &["Tom|relation|best friend|fact"]),
    (
        "Ana is my older sister",
        &["Ana|relation|older sister|fact"],
    ),
    ("Paris is my best bet.", &[]),
    ("My brother's name is Tom.", &["Tom|relation|brother|fact"]),
    ("Maria lives in Lisbon.", &["Maria|lives_in|Lisbon|fact"]),
    ("Maria moved to Porto.", &["Maria|lives_in|Porto|fact"]),
    (
        "Maria doesn't live in Lisbon anymore.",
        &["Maria|lives_in|!Lisbon|fact"],
    ),
    (
        "My sister lives in Madrid.",
        &["user's sister|lives_in|Madrid|fact"],
    ),
    ("John works at Google.", &["John|works_at|Google|fact"]),
    (
        "John no longer works at Google.",
        &["John|works_at|!Google|fact"],
    ),
    (
        "Ana just joined Microsoft.",
        &["Ana|works_at|Microsoft|fact"],
    ),
    (
        "Maria's birthday is June 12.",
        &["Maria|birthday|June 12|fact"],
    ),
    (
        "Tom is allergic to cats.",
        &["Tom|allergic_to|cats|constraint"],
    ),
    ("Maria loves sushi.", &["Maria|sushi|like|preference"]),
    ("Tom hates flying.", &["Tom|flying|dislike|preference"]),
    ("Dana is a teacher.", &["Dana|occupation|teacher|fact"]),
    (
        "Maria is married to Pedro.",
        &["Maria|married_to|Pedro|fact"],
    ),
    ("She lives in Rome.", &[]),
    ("It works for me.", &[]),
    // a speaker line speaks for its speaker
    (
        "Caroline: I live in Boston now.",
        &["Caroline|lives_in|Boston|identity"],
    ),
    // in someone's chat, "never give up" encourages the listener: no instruction
    ("Melanie: Never give up on your dreams!", &[]),
    ("Looks like a blast!", &[]),
    ("Never saw this coming.", &[]),
    (
        "Melanie: I love pottery, it's so calming.",
        &["Melanie|pottery|like|preference"],
    ),
    // questions and conditions state nothing
    ("Do I like tea?", &[]),
    ("Where does Maria live?", &[]),
    ("Am I allergic to peanuts?", &[]),
    ("If I move to Berlin, I'll learn German.", &[]),
    ("What's my name again?", &[]),
    // hedged beliefs are kept, less sure
    (
        "I think I prefer dark mode.",
        &["user|dark mode|prefer|preference"],
    ),
    // choices that replace another
    (
        "I like 4-space indentation better.",
        &["user|indentation|4-space|preference"],
    ),
    (
        "I like dark roast coffee more these days",
        &["user|coffee|dark roast|preference"],
    ),
    (
        "I enjoy working from home more",
        &["user|working from home|prefer|preference"],
    ),
    (
        "I've switched back to tabs for indenting.",
        &["user|indenting|tabs|preference"],
    ),
    (
        "I switched from Vim to Helix",
        &["user|Helix|prefer|preference"],
    ),
    (
        "Please indent my code with 2 spaces.",
        &["user|indenting|2 spaces|preference"],
    ),
    ("Please help me with my essay.", &[]),
    // nothing to read
    ("The weather was great today.", &[]),
    ("Ok, sounds good.", &[]),
];

fn expected(line: &str) -> (String, String, String, bool, BeliefType) {
    let parts: Vec<&str> = line.split('|').collect();
    let (object, negated) = match parts[2].strip_prefix('!') {
        Some(o) => (o, true),
        None => (parts[2], false),
    };
    (
        parts[0].to_string(),
        parts[1].to_string(),
        object.to_string(),
        negated,
        parts[3].parse().unwrap(),
    )
}

#[test]
fn every_labelled_sentence_yields_its_beliefs_and_no_others() {
    assert!(CASES.len() >= 80, "{} sentences", CASES.len());
    let mut failures = Vec::new();
    for (text, want) in CASES {
        let got: Vec<_> = extract(text, 0)
            .into_iter()
            .filter(|s| !observed::is_observed(&s.predicate))
            .map(|s| (s.subject, s.predicate, s.object, s.negated, s.kind))
            .collect();
        let want: Vec<_> = want.iter().map(|w| expected(w)).collect();
        if got != want {
            failures.push(format!("{text}\n   want {want:?}\n   got  {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn statements_read_as_sentences() {
    let cases = [
        ("Maria moved to Porto.", "Maria lives in Porto"),
        (
            "Maria doesn't live in Lisbon anymore.",
            "Maria no longer lives in Lisbon",
        ),
        ("I'm a software engineer.", "User is a software engineer"),
        ("I'm an architect.", "User is an architect"),
        ("Never use emojis.", "Never use emojis"),
        (
            "I prefer spaces for indentation.",
            "User prefers spaces for indentation",
        ),
        ("Maria is my sister.", "Maria is User's sister"),
        (
            "My sister lives in Madrid.",
            "User's sister lives in Madrid",
        ),
        ("I love tea.", "User likes tea"),
    ];
    for (text, want) in cases {
        let got = extract(text, 0);
        assert_eq!(got[0].statement, want, "{text}");
    }
}

#[test]
fn preferences_find_their_domain() {
    let domain = |t: &str| extract(t, 0)[0].domain.clone().unwrap();
    assert_eq!(domain("I prefer tabs over spaces."), "coding");
    assert_eq!(domain("I love tea."), "food");
    assert_eq!(domain("Never use emojis."), "writing");
    assert_eq!(domain("I like long walks."), "general");
}

#[test]
fn hedged_and_third_person_are_less_sure() {
    let sure = extract("I prefer dark mode.", 0)[0].confidence;
    let hedged = extract("I think I prefer dark mode.", 0)[0].confidence;
    let other = extract("Maria loves sushi.", 0)[0].confidence;
    assert!(hedged < sure && other < sure, "{hedged} {other} {sure}");
}

#[test]
fn single_valued_predicates_are_named() {
    assert!(single_valued(BeliefType::Identity, "lives_in"));
    assert!(single_valued(BeliefType::Preference, "tea"));
    assert!(!single_valued(BeliefType::Identity, "speaks"));
    assert!(!single_valued(BeliefType::Constraint, "allergic_to"));
}

#[test]
fn what_someone_did_to_a_speaker_is_kept_about_the_speaker() {
    let got = extract(
        "John: Together we can make a real difference in our town. And my colleague Rob \
         invited me to a beginner's yoga class.",
        0,
    );
    let about_john: Vec<&str> = got
        .iter()
        .filter(|s| s.subject == "John")
        .map(|s| s.statement.as_str())
        .collect();
    assert!(
        about_john.contains(&"Rob invited John to a beginner's yoga class"),
        "{about_john:?}"
    );
}

#[test]
fn a_plan_a_rule_reads_is_not_kept_again_as_said() {
    use chrono::TimeZone;
    let said_at = chrono::Utc
        .with_ymd_and_hms(2023, 7, 20, 12, 0, 0)
        .unwrap()
        .timestamp_micros();
    let got = extract(
        "Maria: Gonna explore more and volunteer at shelters next month.",
        said_at,
    );
    let volunteering = got
        .iter()
        .filter(|s| s.statement.contains("volunteer at shelters"))
        .collect::<Vec<_>>();
    assert_eq!(volunteering.len(), 1, "{got:?}");
    assert!(
        volunteering[0].statement.ends_with("in August 2023"),
        "{got:?}"
    );
}

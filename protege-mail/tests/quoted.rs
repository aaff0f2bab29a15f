//! Quoted text stripped from mail bodies (`quoted = "strip"`): each of the three steps,
//! the layouts of Outlook, Gmail, Apple Mail and Thunderbird, signatures, threads walked
//! oldest first, and large bodies in linear time. Per-language markers are in
//! `quoted_languages.rs`, the published suites of other parsers in `quoted_suites.rs`.

use std::borrow::Cow;
use std::sync::mpsc;
use std::time::Duration;

use protege_mail::{PriorBodies, Stripped, strip_quoted};

/// Strips `body` with nothing stored before it.
fn strip(body: &str) -> String {
    strip_quoted(body, &PriorBodies::new()).text.into_owned()
}

/// Walks `thread` oldest first as the engine does and returns every stripped body:
/// with `strip_quoted` then `add`, and with `strip_next`, which must agree.
fn walk(thread: &[&str]) -> Vec<String> {
    let mut prior = PriorBodies::new();
    let mut next = PriorBodies::new();
    thread
        .iter()
        .map(|body| {
            let stripped = strip_quoted(body, &prior);
            prior.add(body);
            assert_eq!(next.strip_next(body), stripped);
            stripped.text.into_owned()
        })
        .collect()
}

const ANN: &str = "Hi Bob,

Can you resend the invoice for March? The PDF attached to your last mail was empty, and accounting needs it before Friday.

Thanks,
Ann";

#[test]
fn text_in_no_prior_message_and_no_marker_stays_borrowed() {
    let body = "Hi Ann,\n\nThe invoice is attached again.\n\nRegards,\nBob\n\n";
    let stripped = strip_quoted(body, &PriorBodies::new());
    assert_eq!(
        stripped,
        Stripped {
            text: Cow::Borrowed(body),
            removed: 0
        }
    );
    assert!(matches!(stripped.text, Cow::Borrowed(_)));
    // Indexed messages that share nothing with it change nothing either.
    let mut prior = PriorBodies::new();
    prior.add(ANN);
    assert_eq!(strip_quoted(body, &prior).text, body);
}

#[test]
fn step1_removes_a_known_block_with_its_attribution_and_keeps_the_answers() {
    // Bob answers below the quote (bottom post): the attribution and the quoted lines
    // below it go, his answers stay, with or without Ann's message indexed.
    let bob = "Hi Ann,

On Tue, 3 Mar 2020 at 10:00, Ann Smith <ann@example.com> wrote:
> Can you resend the invoice for March? The PDF attached to your last
> mail was empty, and accounting needs it before Friday.

Sorry about that, here it is again.

> Thanks,
> Ann

Bob";
    let answers = "Hi Ann,\n\nSorry about that, here it is again.\n\nBob";
    assert_eq!(walk(&[ANN, bob])[1], answers);
    assert_eq!(strip(bob), answers);
    // Without an attribution above it, a block the thread holds goes alone, and a short
    // quote ("> Thanks, / > Ann" is under 3 lines and 80 characters) stays.
    let unattributed = bob.replace(
        "On Tue, 3 Mar 2020 at 10:00, Ann Smith <ann@example.com> wrote:\n",
        "",
    );
    assert_eq!(
        walk(&[ANN, &unattributed])[1],
        "Hi Ann,\n\nSorry about that, here it is again.\n\n> Thanks,\n> Ann\n\nBob"
    );
}

#[test]
fn an_answer_opening_with_words_the_thread_has_seen_stays() {
    // Bob's second answer quotes Ann again and opens as his first did: "Thanks, Ann /
    // Hi Ann," is a known run of words, but the quote and the unquoted answer are never
    // one block.
    let bob1 = format!("{}\n\nHi Ann,\n\nThe PDF is fixed now.\n\nBob", quote(ANN));
    let bob2 = format!(
        "{}\n\nHi Ann,\n\nOne more thing: April's invoice is attached too.\n\nBob",
        quote(ANN)
    );
    assert_eq!(
        walk(&[ANN, &bob1, &bob2])[1..],
        [
            "Hi Ann,\n\nThe PDF is fixed now.\n\nBob",
            "Hi Ann,\n\nOne more thing: April's invoice is attached too.\n\nBob",
        ]
    );
}

fn quote(body: &str) -> String {
    body.lines()
        .map(|l| format!("> {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn step1_matches_a_quote_rewrapped_and_nested() {
    // Ann writes long lines; Bob's client re-wraps the quote at 72 columns; Ann's next
    // reply quotes both with `>>` and `> >` markers, and answers inline.
    let bob = "Done, the invoice is attached. Accounting has the PDF as well now, so
Friday is not a problem any more.

On 03/03/2020 10:00, Ann Smith wrote:
> Hi Bob,
>
> Can you resend the invoice for March? The PDF attached to your last mail
> was empty, and accounting needs it before Friday.
>
> Thanks,
> Ann
";
    let ann = "> Done, the invoice is attached. Accounting has the PDF as well now,
> so Friday is not a problem any more.

Got it, thank you!

>> Can you resend the invoice for March? The PDF attached to your last
> > mail was empty, and accounting needs it before Friday.

One more thing: could you send April's too?

Ann";
    assert_eq!(
        walk(&[ANN, bob, ann]),
        [
            ANN.to_owned(),
            "Done, the invoice is attached. Accounting has the PDF as well now, so\n\
             Friday is not a problem any more."
                .to_owned(),
            "Got it, thank you!\n\nOne more thing: could you send April's too?\n\nAnn".to_owned(),
        ]
    );
}

#[test]
fn step1_needs_three_lines_or_eighty_characters() {
    let prior_text = "Alpha beta gamma delta.\nEpsilon zeta eta theta.\nIota kappa lambda mu.\n\
        The quick brown fox jumps over the lazy dog while the cat watches it from the old wall.";
    let mut prior = PriorBodies::new();
    prior.add(prior_text);
    // Two short lines (< 80 characters) in the middle: kept.
    let two = "Top.\n> Alpha beta gamma delta.\n> Epsilon zeta eta theta.\nBottom.";
    assert_eq!(strip_quoted(two, &prior).text, two);
    // Three short lines: removed.
    let three = "Top.\n> Alpha beta gamma delta.\n> Epsilon zeta eta theta.\n> Iota kappa lambda mu.\nBottom.";
    assert_eq!(strip_quoted(three, &prior).text, "Top.\nBottom.");
    // One line of 80 characters or more: removed, quoted or not.
    let long = "Top.\nThe quick brown fox jumps over the lazy dog while the cat watches it from the old wall.\nBottom.";
    assert_eq!(strip_quoted(long, &prior).text, "Top.\nBottom.");
}

#[test]
fn step1_blocks_are_one_piece_of_one_prior_body() {
    // Each patch's diffstat shares its lines with the one before: every run of four
    // words of the last diffstat is known, but from three different patches, two lines
    // from each. No three lines (or 80 characters) are one piece of one patch: nothing
    // goes.
    let patches = [
        "Teach the lexer about nested lists.\n\n a.c | 2 +-\n b.c | 2 +-\n 2 files changed, 2 insertions(+), 2 deletions(-)\n",
        "Indent nested lists when printing.\n\n b.c | 2 +-\n c.c | 2 +-\n 2 files changed, 2 insertions(+), 2 deletions(-)\n",
        "Check the depth of nested lists.\n\n c.c | 2 +-\n d.c | 2 +-\n 2 files changed, 2 insertions(+), 2 deletions(-)\n",
        "Handle empty lists everywhere.\n\n a.c | 2 +-\n b.c | 2 +-\n c.c | 2 +-\n d.c | 2 +-\n 4 files changed, 4 insertions(+), 4 deletions(-)\n",
    ];
    let stripped = walk(&patches);
    assert_eq!(stripped[3], patches[3]);
    // A quote whose first words the thread holds elsewhere too ("Please send the
    // invoice" opens Ann's first message) is still one piece of Bob's message.
    let ann = "Please send the invoice to the accounting team today.\n\nAnn";
    let bob = "Please send the invoice for March again, the PDF you sent was empty and\n\
        accounting needs it before Friday, or the payment will be late.\n\nBob";
    let reply = "> Please send the invoice for March again, the PDF you sent was empty and\n\
        > accounting needs it before Friday, or the payment will be late.\n\nDone, sorry about that.";
    assert_eq!(walk(&[ann, bob, reply])[2], "Done, sorry about that.");
    // A paragraph that repeats itself is one piece of the body that holds it.
    let paragraph = "Thanks for getting back to me. The order page still says processing. ";
    let repeated = format!("Message 1.\n\n{}", paragraph.repeat(8).trim_end());
    let quoting = format!("> {}\n\nAny news?", paragraph.repeat(8).trim_end());
    assert_eq!(walk(&[&repeated, &quoting])[1], "Any news?");
}

#[test]
fn step1_leaves_the_diff_regions_of_a_patch() {
    let v1 = "Fix the overflow in the parser.

Signed-off-by: Ann <ann@example.com>
---
 parser.c | 4 ++--
 1 file changed, 2 insertions(+), 2 deletions(-)

diff --git a/parser.c b/parser.c
index 1111111..2222222 100644
--- a/parser.c
+++ b/parser.c
@@ -10,7 +10,7 @@ static int parse(struct parser *p)
 {
 \tint depth = 0;
-\tchar buf[16];
+\tchar buf[64];
 
 \twhile (next(p)) {
-\t\tif (depth > 16)
+\t\tif (depth >= 64)
 \t\t\treturn -1;
-- 
2.43.0
";
    // A review quoting the hunk: a quote like any other, step 1 removes it.
    let review = "> -\tchar buf[16];\n> +\tchar buf[64];\n> \n> \twhile (next(p)) {\n\
        > -\t\tif (depth > 16)\n> +\t\tif (depth >= 64)\n\nWhy 64 and not 32?\n\nBob\n";
    // The second version re-posts the first hunk and adds one: all of it is new
    // content; only its signature goes (step 3).
    let hunk = v1
        .split("diff --git")
        .nth(1)
        .unwrap()
        .split("-- \n")
        .next()
        .unwrap();
    let v2 = format!(
        "Fix the overflow in the parser, and check the length too.\n\n\
         Signed-off-by: Ann <ann@example.com>\n---\n parser.c | 6 ++++--\n\n\
         diff --git{hunk}\
         @@ -30,6 +30,8 @@ static int next(struct parser *p)\n \tif (p->pos >= p->len)\n\
         \t\treturn 0;\n+\tif (p->len > MAX_LEN)\n+\t\treturn 0;\n \treturn 1;\n }}\n-- \n2.43.0\n"
    );
    let stripped = walk(&[v1, review, &v2]);
    assert_eq!(stripped[1], "Why 64 and not 32?\n\nBob");
    assert_eq!(stripped[2], v2.split("\n-- \n").next().unwrap());
    // The same hunk outside a patch (no `diff --git` above it) is a known block.
    let pasted = format!(
        "Here is what I tried:\n\n{}\nIt did not help.",
        hunk.split_once("@@ -10")
            .unwrap()
            .1
            .split_once('\n')
            .unwrap()
            .1
    );
    assert_eq!(
        walk(&[v1, &pasted])[1],
        "Here is what I tried:\n\nIt did not help."
    );
}

#[test]
fn a_sign_off_above_a_quote_header_an_earlier_message_also_has_stays() {
    // Alfonso signs both of his replies alike, and both quote a message the list relayed
    // from Thorsten: the sign-off and the header's first line are in the earlier
    // message too, but the sign-off is his own words, not part of the quote.
    let header = "From: OTA list <ota@list.example.org> On Behalf Of Thorsten Hertel";
    let first = format!(
        "Hi Thorsten,\n\nCould you please provide the mean angle?\n\nRegards,\nAlfonso\n\n\n\
         {header}\nSent: Thursday, April 25, 2019 9:17 AM\nTo: ota@list.example.org\n\
         Subject: Re: channel model tables\n\nRuixin,\n\nWe focus on the propagation parameters.\n"
    );
    let second = format!(
        "Hi Thorsten,\n\nThanks for the confirmation.\n\nRegards,\nAlfonso\n\n\n\
         {header}\nSent: Monday, April 29, 2019 8:06 AM\nTo: ota@list.example.org\n\
         Subject: Re: channel model tables\n\nAlfonso,\n\nWe get the same angle.\n"
    );
    assert_eq!(
        walk(&[&first, &second])[1],
        "Hi Thorsten,\n\nThanks for the confirmation.\n\nRegards,\nAlfonso"
    );
}

#[test]
fn a_pasted_python_session_is_the_authors_own() {
    let question = "Is it a problem of lapack?

>>> a=array([[1,0],[0,1]])
>>> b=array([[0,1],[-1,0]])
>>> M=a+b*complex(0,1.0)
>>> Heigenvalues(M)
array([ 1.,  1.])";
    // The answer quotes the question, then runs the same lines again: the quote goes, the
    // session stays, though the question holds its lines.
    let answer = "On Sunday, Alessandro wrote:
> Is it a problem of lapack?
>
> >>> a=array([[1,0],[0,1]])
> >>> b=array([[0,1],[-1,0]])
> >>> M=a+b*complex(0,1.0)
> >>> Heigenvalues(M)

I suspect your lapack. I get:

>>> a=array([[1,0],[0,1]])
>>> b=array([[0,1],[-1,0]])
>>> M=a+b*complex(0,1.0)
>>> Heigenvalues(M)
array([ 0.,  2.])
>>>

-Travis";
    assert_eq!(
        walk(&[question, answer])[1],
        "I suspect your lapack. I get:

>>> a=array([[1,0],[0,1]])
>>> b=array([[0,1],[-1,0]])
>>> M=a+b*complex(0,1.0)
>>> Heigenvalues(M)
array([ 0.,  2.])
>>>"
    );
    // The asker runs her session again in her next message: its output, though her first
    // message holds it, is part of it.
    let session = ">>> m = MA.masked_values(a, -99)
>>> m
    array(data =
             [[  1,  2,  3,-99,  5,]
              [ 10, 20, 30,-99, 50,]],
           mask =
              [[0,0,0,1,0,]
               [0,0,0,1,0,]],
           fill_value=-99)";
    let first = format!("I am using masked arrays:\n\n{session}\n\nIs this expected?");
    let again = format!("Thanks for the pointer.\n\n{session}\n\nCan I rely on this?");
    assert_eq!(walk(&[&first, &again])[1], again);
    // A compact quote three levels deep stays a quote: its second level opens with `>>`.
    let nested = "Agreed.\n\n> On Mon, Bob wrote:\n>> On Sun, Ann wrote:\n>>> Ship it on Friday.\n>> Why Friday?\n> Because.";
    assert_eq!(walk(&[nested])[0], "Agreed.");
}

#[test]
fn a_supercite_quote_is_answered_below_it() {
    let reply = "On Mon, 26 Nov 2001 08:21:40 +0100 Martin Wiechert wrote:

Martin> Are there any plans to wrap GSL for Numpy2?
Martin> I did not actually try it (It's not Python ;-)),
Martin> but it looks clean and powerful.

There is actually a project to wrap gsl for python.

Herbert> Travis Oliphant has one.

Not that I know of.

Greetings,
Jochen";
    assert_eq!(
        walk(&[reply])[0],
        "There is actually a project to wrap gsl for python.

Herbert> Travis Oliphant has one.

Not that I know of.

Greetings,
Jochen"
    );
    // A program's prompt is no quote: only the first line below an attribution is read
    // for a prefix.
    let idl = "In IDL I write:\n\nIDL> a = [[1,2],[3,4]]\nIDL> print, a\n\nWhat is it in Numeric?";
    assert_eq!(walk(&[idl])[0], idl);
}

#[test]
fn an_answer_below_two_answered_quotes_stays() {
    // One reply to two messages: each quote under its own attribution, the answer below
    // both.
    let reply = "On Tue, 17 Nov 2009 21:28:37 +0600, Mikhail wrote:
> Keeping unused files open helps to see \"Too many open files\" often.
On Tue, 17 Nov 2009 21:28:38 +0600, Mikhail wrote:
> Signed-off-by: Mikhail

Hi Mikhail,

Welcome to notmuch, and thanks for these patches! I've pushed both of them.

-Carl";
    assert_eq!(
        walk(&[reply])[0],
        "Hi Mikhail,\n\nWelcome to notmuch, and thanks for these patches! I've pushed both of them."
    );
}

#[test]
fn a_signature_goes_whole_though_earlier_patches_share_its_first_lines() {
    // Every patch of a series ends alike, but the list's footer names another list: step
    // 1 knows the signature's first lines, step 3 takes the signature and all below it.
    let patch = |n: u32, list: &str| {
        format!(
            "Signed-off-by: Joe Perches <joe@perches.com>\n---\n \
             drivers/x{n}.c | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n\n\
             diff --git a/drivers/x{n}.c b/drivers/x{n}.c\n--- a/drivers/x{n}.c\n\
             +++ b/drivers/x{n}.c\n-\treturn {n};;\n+\treturn {n};\n-- \n1.7.3.1.g432b3.dirty\n\n--\n\
             To unsubscribe from this list: send the line \"unsubscribe {list}\" in\n\
             the body of a message to majordomo@vger.kernel.org\n\
             More majordomo info at  http://vger.kernel.org/majordomo-info.html\n"
        )
    };
    let (first, second) = (patch(1, "netdev"), patch(2, "linux-scsi"));
    let stripped = walk(&[&first, &second]);
    assert_eq!(stripped[1], second.split("\n-- \n").next().unwrap());
}

#[test]
fn step1_leaves_a_patch_diffstat_that_its_cover_letter_holds() {
    // A series' cover letter lists every file; each patch repeats its own lines of it
    // below the `---` of `git format-patch`, and a second version repeats the first's.
    let cover = "This series removes unnecessary semicolons.

Joe Perches (2):
  bnx2x: Remove unnecessary semicolons
  wm8904: Remove unnecessary semicolons

 drivers/net/bnx2x/bnx2x_link.c |    4 ++--
 drivers/net/bnx2x/bnx2x_main.c |    2 +-
 sound/soc/codecs/wm8904.c      |    2 +-
 3 files changed, 4 insertions(+), 4 deletions(-)
";
    let patch = "Signed-off-by: Joe Perches <joe@perches.com>
---
 drivers/net/bnx2x/bnx2x_link.c |    4 ++--
 drivers/net/bnx2x/bnx2x_main.c |    2 +-
 2 files changed, 3 insertions(+), 3 deletions(-)

diff --git a/drivers/net/bnx2x/bnx2x_link.c b/drivers/net/bnx2x/bnx2x_link.c
index 5809196..38aeffe 100644
--- a/drivers/net/bnx2x/bnx2x_link.c
+++ b/drivers/net/bnx2x/bnx2x_link.c
@@ -3904,7 +3904,7 @@ static u8 bnx2x_8726_read_sfp_module_eeprom(
-\t\tmsleep(1);;
+\t\tmsleep(1);
-- 
1.7.3.1
";
    let v2 = "Signed-off-by: Joe Perches <joe@perches.com>
---
V2: against -next

 drivers/net/bnx2x/bnx2x_link.c |    4 ++--
 drivers/net/bnx2x/bnx2x_main.c |    2 +-
 2 files changed, 3 insertions(+), 3 deletions(-)

Index: drivers/net/bnx2x/bnx2x_link.c
-- 
1.7.3.1
";
    let stripped = walk(&[cover, patch, v2]);
    assert_eq!(stripped[1], patch.split("\n-- \n").next().unwrap());
    assert_eq!(stripped[2], v2.split("\n-- \n").next().unwrap());
    // Without a patch below it, `---` is a rule like any other: the known lines go.
    let pasted = "Which of these changed?\n---\n drivers/net/bnx2x/bnx2x_link.c |    4 ++--\n \
        drivers/net/bnx2x/bnx2x_main.c |    2 +-\n---\nThanks.";
    assert_eq!(
        walk(&[cover, pasted])[1],
        "Which of these changed?\n---\n---\nThanks."
    );
}

#[test]
fn a_short_quote_is_left_by_step1_and_taken_by_step2_when_trailing() {
    let mut prior = PriorBodies::new();
    prior.add("Can we meet Thursday?\nAnn");
    // In the middle it stays (too short for step 1, not trailing) ...
    let middle = "> Can we meet Thursday?\n\nYes, at ten.\n\nBob";
    assert_eq!(strip_quoted(middle, &prior).text, middle);
    // ... at the end it is a trailing run of quoted lines (blank lines inside it too).
    let trailing = "Yes, at ten.\n\nBob\n\n> Can we meet Thursday?\n>\n\n> Ann\n";
    assert_eq!(strip_quoted(trailing, &prior).text, "Yes, at ten.\n\nBob");
    assert_eq!(strip(trailing), "Yes, at ten.\n\nBob");
}

#[test]
fn inline_reply_keeps_the_answers() {
    let question = "Three questions before we sign:\n\
        1. Is the price per seat or per team, and does it include the onboarding sessions?\n\
        2. Can we pay yearly instead of monthly, with the discount mentioned on the phone?\n\
        3. Is support included?";
    let answer = "Hi Ann, answers inline.

> 1. Is the price per seat or per team, and does it include the onboarding sessions?

Per seat; onboarding is included.

> 2. Can we pay yearly instead of monthly, with the discount mentioned on the phone?

Yes, 10% off.

> 3. Is support included?

Yes.";
    assert_eq!(
        walk(&[question, answer])[1],
        "Hi Ann, answers inline.\n\nPer seat; onboarding is included.\n\nYes, 10% off.\n\n\
         > 3. Is support included?\n\nYes."
    );
}

/// The text and the removed characters of `body` stripped with nothing stored before it.
fn strip_counted(body: &str) -> (String, usize) {
    let stripped = strip_quoted(body, &PriorBodies::new());
    (stripped.text.into_owned(), stripped.removed)
}

#[test]
fn an_answered_quote_goes_with_its_attribution_and_the_answers_stay() {
    // Bottom post: the answer below the quote.
    let bottom = "Hi Ann,\n\nOn Tue, Mar 3, 2020 at 10:00 AM Ann Smith <ann@example.com> wrote:\n\
        > Can we meet on Thursday?\n>\n> Ann\n\nThursday at ten works.\n\nBob\n";
    assert_eq!(
        strip_counted(bottom),
        ("Hi Ann,\n\nThursday at ten works.\n\nBob".to_owned(), 104)
    );
    // Answers between the quoted lines: every `>` line below the attribution goes, with
    // the blank lines directly after it.
    let inline = "Answers below.\n\nOn 03/03/2020 10:00, Ann Smith wrote:\n> Price per seat?\n\n\
        Yes, per seat.\n\n> Support included?\n>\n\nYes.\n\n> Thanks,\n> Ann\n";
    assert_eq!(
        strip_counted(inline),
        ("Answers below.\n\nYes, per seat.\n\nYes.".to_owned(), 98)
    );
    // The blank lines directly below a removed quote go with it.
    assert_eq!(
        strip_counted(
            "Test reply\nOn 04/19/2011 07:10 AM, Roman Tkachenko wrote:\n\n>Test test\n\n\
            Regards, Roman"
        ),
        ("Test reply\nRegards, Roman".to_owned(), 60)
    );
}

#[test]
fn an_attribution_on_the_first_line_above_an_answered_quote() {
    // The whole body would go at the attribution; the answers stay instead.
    let body = "On 04/02/2012 06:26 PM, Megan One wrote:\n> Hi\nHello\n";
    assert_eq!(strip_counted(body), ("Hello".to_owned(), 47));
    let inline = "On Tue, Apr 29, 2014 at 4:22 PM, Dev <dev@example.com> wrote:\n\n> First?\n>\n\n\
        Yes.\n\n> Second?\n\nNo.\n\n> -- Tim\n\n--\nMy signature\n";
    assert_eq!(strip_counted(inline), ("Yes.\n\nNo.".to_owned(), 114));
}

#[test]
fn an_answered_quote_under_an_attribution_inside_the_authors_line() {
    let body = "Sounds good On Wed, Apr 4, 2012 at 3:59 PM, bob@example.com wrote:\n> Hi\n\n\
        And see you then.\n";
    assert_eq!(
        strip_counted(body),
        ("Sounds good\nAnd see you then.".to_owned(), 62)
    );
    // CRLF line breaks stay as they are.
    let crlf = "Sounds good On Wed, Apr 4, 2012 at 3:59 PM, bob@example.com wrote:\r\n> Hi\r\n\
        And see you then.\r\n";
    assert_eq!(
        strip_counted(crlf),
        ("Sounds good\r\nAnd see you then.".to_owned(), 63)
    );
}

#[test]
fn an_unanswered_or_unmarked_quote_still_takes_everything_after_it() {
    // Nothing but a quote below the attribution.
    let quote_only = "Fine.\n\nOn Monday, Ann wrote:\n> Thursday?\n>\n> Ann\n";
    assert_eq!(strip_counted(quote_only), ("Fine.".to_owned(), 44));
    // An unmarked quote (Outlook, some clients): the text after the attribution is not
    // the author's.
    let unmarked = "Fine.\n\nOn Monday, Ann wrote:\nThursday?\n\nAnn\n";
    assert_eq!(strip_counted(unmarked), ("Fine.".to_owned(), 39));
    // The lines after a separator or a header block go whatever they are.
    let header =
        "Fine.\n\n-----Original Message-----\nFrom: Ann\nSent: Monday\n> Thursday?\n\nAnn\n";
    assert_eq!(strip_counted(header), ("Fine.".to_owned(), 69));
}

#[test]
fn a_link_wrapped_inside_a_quote_is_no_answer() {
    // The sender's client wrapped a quoted link without repeating `>`: the piece between
    // the quoted lines belongs to the quote, and the answer below it stays.
    let body = "Blah\n\nOn Monday, 24 September, 2012 at 3:46 PM, bob wrote:\n\n\
        > [Ticket #50] test from bob\n>\n> View ticket (http://example.com/action\n\
        _nonce=3dd518)\n>\n\nThanks!\n";
    assert_eq!(strip_counted(body), ("Blah\n\nThanks!".to_owned(), 145));
    // Also in a trailing run of quoted lines.
    let trailing = "Blah\n\n> View ticket (http://example.com/action\n_nonce=3dd518)\n>\n";
    assert_eq!(strip_counted(trailing), ("Blah".to_owned(), 60));
    // Short answers between quoted lines, with no blank line around them, stay.
    let compact = "Blah\n\nOn Monday, Ann wrote:\n> Price?\nPer seat.\n> Support?\nYes\n";
    assert_eq!(
        strip_counted(compact),
        ("Blah\n\nPer seat.\nYes".to_owned(), 43)
    );
}

#[test]
fn the_tail_of_a_long_quoted_line_wrapped_without_its_marker_is_quote() {
    // Outlook re-quoting an Outlook reply (LKML, August 2010): the tails of long lines
    // land on lines of their own without `>`, directly between quoted lines.
    let body = "There are patches that address this issue.\n\n\
        > -----Original Message-----\n\
        > From: Michael Neuling [mailto:mikey@neuling.org]\n\
        > Cc: Alexandre Bounine; linuxppc-dev@lists.ozlabs.org;\n\
        linux-kernel@vger.kernel.org;\n\
        > Subject: Re: [PATCH v2 5/7] powerpc/85xx: Add MChk handler for SRIO\n\
        port\n\
        > \n\
        > > > MCSR_MASK is not defined anywhere, so when I compile this code, I\n\
        get this:\n\
        > >\n\
        > Mikey\n";
    assert_eq!(
        strip_counted(body),
        (
            "There are patches that address this issue.".to_owned(),
            body.chars().count() - 42
        )
    );
    // Step 1: the pieces between two blocks of an earlier message go with them.
    let earlier = "I don't know what happened here but 2.6.35 is broken because of this\n\
        problem, and every board with SRIO enabled fails to compile the driver:\n\n\
        arch/powerpc/sysdev/fsl_rio.c:248: error: 'MCSR_MASK' undeclared (first use in this function)\n\
        arch/powerpc/sysdev/fsl_rio.c:250: error: 'MCSR_BUS_RBERR' undeclared (first use in this function)\n";
    let reply = "This happened after the change to the book-e definitions.\n\n\
        > I don't know what happened here but 2.6.35 is broken because of this\n\
        > problem, and every board with SRIO enabled fails to compile the driver:\n\
        > arch/powerpc/sysdev/fsl_rio.c:248: error: 'MCSR_MASK' undeclared\n\
        (first use in this function)\n\
        > arch/powerpc/sysdev/fsl_rio.c:250: error: 'MCSR_BUS_RBERR' undeclared\n\
        (first use in this function)\n\
        > and a line the earlier message never had, so that no trailing run\n\
        \n\
        Alex.\n";
    assert_eq!(
        walk(&[earlier, reply])[1],
        "This happened after the change to the book-e definitions.\n\n\
         > and a line the earlier message never had, so that no trailing run\n\n\
         Alex."
    );
    // An answer below a question, or below a line that ends a sentence, stays; so does
    // one of more than three words.
    for (answer, between) in [
        (
            "Yes.",
            "> Could you check the configuration of the staging servers for me?",
        ),
        (
            "Done.",
            "> Please restart the mail relay once the new certificate is in place.",
        ),
        (
            "I did it already",
            "> Restart the mail relay once the new certificate is in place",
        ),
    ] {
        let body = format!("Blah\n\n{between}\n{answer}\n> Thanks\n\nBob\n");
        assert!(
            strip(&body).contains(answer),
            "{answer:?} removed from {body:?}"
        );
    }
}

#[test]
fn split_attribution_with_a_blank_line_and_a_closing_bracket() {
    // Polymail: a blank line before the bracketed address, whose `>` opens the last line.
    let body = "Test reply\n\nOn Tue, Apr 11, 2017 at 10:07 PM John Smith\n\n<\n\
        mailto:John Smith <johnsmith@gmail.com>\n> wrote:\nTest quoted data\n";
    assert_eq!(strip_counted(body), ("Test reply".to_owned(), 115));
    // A blank line before anything else ends it: the sentence after it stays.
    let paragraphs = "On 3 March 2020 we met Ann Smith\n\nand she wrote:\nnothing.\n";
    assert_eq!(strip_counted(paragraphs), (paragraphs.to_owned(), 0));
}

#[test]
fn sent_ends_an_attribution_that_names_an_address() {
    let body = "Test reply\n\nOn 11-Apr-2011, at 6:54 PM, Roman Tkachenko <romant@example.com> sent:\n\n\
        >\n> Test\n";
    assert_eq!(strip_counted(body), ("Test reply".to_owned(), 83));
    let sentence = "On 3 May we sent:\n> the parcel\nIt came back.";
    assert_eq!(strip_counted(sentence), (sentence.to_owned(), 0));
}

#[test]
fn a_mailing_lists_footer_goes() {
    let footer = "\n\n_______________________________________________\nriak-users mailing list\n\
        riak-users@lists.basho.com\nhttp://lists.basho.com/mailman/listinfo/riak-users_lists.basho.com\n";
    let body = format!("Is there a way to clear a bucket?{footer}");
    assert_eq!(
        strip_counted(&body),
        ("Is there a way to clear a bucket?".to_owned(), footer.len())
    );
    // A rule with no link below it, or more than six lines, is the author's.
    let no_link = "Totals:\n____________________\nSum 42\n";
    assert_eq!(strip_counted(no_link), (no_link.to_owned(), 0));
    let long = format!(
        "Notes:\n____________________\n{}see https://example.com\n",
        "a line\n".repeat(6)
    );
    assert_eq!(strip_counted(&long), (long.clone(), 0));
}

#[test]
fn a_closing_name_after_a_dash_is_a_signature() {
    let body = "Having the function would be great.\n\n-Abhishek Kona\n";
    assert_eq!(
        strip_counted(body),
        ("Having the function would be great.".to_owned(), 17)
    );
    assert_eq!(strip_counted("Thanks\n-Tim"), ("Thanks".to_owned(), 5));
    // A list's last item, a lower-case word or a sentence after a dash stay.
    for text in [
        "To do:\n-Ship\n-Invoice",
        "To do:\n* Ship\n-Invoice",
        "Prices:\n-fixed",
        "See you.\n-Not before Friday though, I am away",
    ] {
        assert_eq!(strip_counted(text), (text.to_owned(), 0), "{text:?}");
    }
}

#[test]
fn step2_attribution_takes_everything_after_it() {
    let body = "Thursday at ten works for me.

On Tue, Mar 3, 2020 at 10:00 AM Ann Smith <ann@example.com> wrote:

Can we meet on Thursday to go over the budget?
(unquoted: some clients do not mark the quote)

Ann";
    assert_eq!(strip(body), "Thursday at ten works for me.");
    // Also with no quote after it at all.
    assert_eq!(
        strip("See you then.\nOn Monday, Ann wrote:\nThat's all."),
        "See you then."
    );
}

#[test]
fn sentences_ending_in_wrote_are_not_attributions() {
    let body = "On the other hand, my colleague wrote:\n\"we should wait\".\n\
        In 2019 the auditor wrote:\nnothing about it.\nOn your remote host you can run:\n  make";
    assert_eq!(strip(body), body);
}

#[test]
fn split_attribution_lines() {
    // Gmail wraps a long attribution in its plain-text part.
    let two = "Thanks!\n\nOn Tue, Mar 3, 2020 at 10:00 AM Ann Smith from Accounting <\n\
        ann.smith@accounting.example.com> wrote:\n\n> The invoice is attached.\n";
    assert_eq!(strip(two), "Thanks!");
    let three = "Thanks!\n\nOn Dec 16, 2011, at 12:47 PM, Corey Donohoe\n<reply@reply.github.com>\n\
        wrote:\n\nnot marked as a quote\n";
    assert_eq!(strip(three), "Thanks!");
    // The line above an attribution is not taken with it.
    let above = "Call me at 5.\nOn Tue, Mar 3, 2020 at 10:00 AM Ann <ann@example.com> wrote:\n> Hi";
    assert_eq!(strip(above), "Call me at 5.");
}

#[test]
fn attribution_inside_the_authors_line() {
    let body = "Sounds good On Wed, Apr 4, 2012 at 3:59 PM, bob@example.com wrote:\n> Hi";
    assert_eq!(strip(body), "Sounds good");
}

#[test]
fn signature_from_a_dash_dash_line() {
    let body = "See you Thursday.\n\nRegards,\nBob\n-- \nBob Jones | Acme Corp\n+1 555 0100\n";
    assert_eq!(strip(body), "See you Thursday.\n\nRegards,\nBob");
    let bare = "See you Thursday.\n--\nBob Jones\n";
    assert_eq!(strip(bare), "See you Thursday.");
    // Dashes inside a line, or more than two, are text.
    let text = "Prices -- as agreed -- stay.\n---\nNext item.\n";
    assert_eq!(strip(text), text);
}

#[test]
fn regards_stays() {
    let body = "The parcel left today.\n\nKind regards,\nBob Jones\nAcme Corp";
    assert_eq!(strip(body), body);
    let with_quote = "The parcel left today.\n\nRegards,\nBob\n\n> When will it ship?\n";
    assert_eq!(strip(with_quote), "The parcel left today.\n\nRegards,\nBob");
}

#[test]
fn taglines_take_what_follows() {
    let body = "Thursday is fine.\n\nSent from my iPhone\n\nAnything after the tagline goes.\n";
    assert_eq!(strip(body), "Thursday is fine.");
    let sentence = "Here it is.\n\nSent from my desk, which is easier than my phone.";
    assert_eq!(strip(sentence), sentence);
}

#[test]
fn steps_repeat_until_nothing_changes() {
    // The signature cut leaves a trailing quote, which the next round removes.
    let body = "Answer.\n\n> quoted question\n> on two lines\n\n-- \nBob\nAcme Corp\n";
    assert_eq!(strip(body), "Answer.");
}

#[test]
fn a_body_that_would_become_empty_keeps_its_text() {
    for body in [
        "> only a quote\n> nothing else\n",
        "On Tue, Mar 3, 2020 at 10:00 AM Ann <ann@example.com> wrote:\nHello, unmarked\n",
        "-- \nBob Jones\n",
        "Sent from my iPhone",
    ] {
        let stripped = strip_quoted(body, &PriorBodies::new());
        assert_eq!(
            stripped,
            Stripped {
                text: Cow::Borrowed(body),
                removed: 0
            },
            "{body:?}"
        );
    }
    // All of it in a prior message.
    let mut prior = PriorBodies::new();
    prior.add(ANN);
    assert_eq!(strip_quoted(ANN, &prior).text, ANN);
}

#[test]
fn removed_counts_characters_and_keeps_line_breaks() {
    let body = "Très bien, à jeudi.\r\n\r\nLe mar. 3 mars 2020 à 10:00, Anne <anne@example.com> a écrit :\r\n> Réunion jeudi ?\r\n";
    let stripped = strip_quoted(body, &PriorBodies::new());
    assert_eq!(stripped.text, "Très bien, à jeudi.");
    assert_eq!(
        stripped.removed,
        body.chars().count() - "Très bien, à jeudi.".chars().count()
    );
    assert_eq!(stripped.removed, 87);
    // Inner lines stay byte for byte, CRLF included, when a middle block goes.
    let mut prior = PriorBodies::new();
    prior.add("one two three four five\nsix seven eight nine ten\neleven twelve thirteen");
    let body = "Top,\r\n  indented  line \r\n> one two three four five\r\n> six seven eight nine ten\r\n\
        > eleven twelve thirteen\r\nEnd.\r\n";
    assert_eq!(
        strip_quoted(body, &prior).text,
        "Top,\r\n  indented  line \r\nEnd."
    );
}

#[test]
fn outlook_layouts() {
    let desktop = "Thanks, I'll check with accounting.

Bob

________________________________
From: Ann Smith <ann@example.com>
Sent: Tuesday, March 3, 2020 10:00 AM
To: Bob Jones <bob@example.com>
Subject: Invoice for March

Hi Bob,

Can you resend the invoice for March?

Thanks,
Ann
";
    assert_eq!(strip(desktop), "Thanks, I'll check with accounting.\n\nBob");
    let classic = "Thanks, I'll check.\n\n-----Original Message-----\n\
        From: Ann Smith [mailto:ann@example.com]\nSent: Tuesday, March 03, 2020 10:00 AM\n\
        To: Bob Jones\nSubject: Invoice for March\n\nHi Bob,\n";
    assert_eq!(strip(classic), "Thanks, I'll check.");
    // The HTML part as text: bold header names under a rule.
    let bold = "Thanks.\n\n *From:* Ann Smith [mailto:ann@example.com]\n *Sent:* Tuesday, \
        March 3, 2020 10:00 AM\n *To:* Bob Jones\n *Subject:* Invoice\n\nHi Bob,\n";
    assert_eq!(strip(bold), "Thanks.");
    // "From: Paris" / "To: London" is not a header block: no date, no subject.
    let trip = "Booked:\nFrom: Paris\nTo: London\nSee you there.";
    assert_eq!(strip(trip), trip);
}

#[test]
fn gmail_layouts() {
    let reply = "Sure, Thursday works.

On Tue, Mar 3, 2020 at 10:00 AM Ann Smith <ann@example.com> wrote:

> Can we meet on Thursday to go over the budget?
>
> Ann
>
";
    assert_eq!(strip(reply), "Sure, Thursday works.");
    let forward = "FYI, see below.

---------- Forwarded message ---------
From: Ann Smith <ann@example.com>
Date: Tue, Mar 3, 2020 at 10:00 AM
Subject: Budget
To: Bob Jones <bob@example.com>


Can we meet on Thursday to go over the budget?
";
    assert_eq!(strip(forward), "FYI, see below.");
}

#[test]
fn apple_mail_layouts() {
    let iphone = "Thursday is fine.

Sent from my iPhone

> On 3 Mar 2020, at 10:00, Ann Smith <ann@example.com> wrote:
> 
> Can we meet on Thursday to go over the budget?
";
    assert_eq!(strip(iphone), "Thursday is fine.");
    let mac = "Thursday is fine.\n\n> On 3 Mar 2020, at 10:00, Ann Smith <ann@example.com> wrote:\n> \n\
        > Can we meet on Thursday?\n> \n> Ann\n\n";
    assert_eq!(strip(mac), "Thursday is fine.");
    let forward = "See below.

Begin forwarded message:

From: Ann Smith <ann@example.com>
Subject: Budget
Date: 3 March 2020 at 10:00:00 CET
To: Bob Jones <bob@example.com>

Can we meet on Thursday?
";
    assert_eq!(strip(forward), "See below.");
}

#[test]
fn thunderbird_layouts() {
    let reply =
        "Thursday is fine.\n\nOn 03/03/2020 10:00, Ann Smith wrote:\n> Can we meet on Thursday?\n";
    assert_eq!(strip(reply), "Thursday is fine.");
    let forward = "See below.


-------- Forwarded Message --------
Subject: \tBudget
Date: \tTue, 3 Mar 2020 10:00:00 +0100
From: \tAnn Smith <ann@example.com>
To: \tBob Jones <bob@example.com>



Can we meet on Thursday?
";
    assert_eq!(strip(forward), "See below.");
    let original =
        "Noted.\n\n-------- Original Message --------\nSubject: Budget\n\nCan we meet?\n";
    assert_eq!(strip(original), "Noted.");
}

#[test]
fn a_top_posted_thread_walked_oldest_first() {
    let m0 = "Hello,\n\nMy order 1042 arrived damaged: the box was crushed and the lamp inside is broken.\n\nAnn";
    let m1 = "Hello Ann,\n\nSorry to hear that. Could you send a photo of the lamp?\n\nBest,\nSupport\n\n\
        On Tue, 3 Mar 2020 at 10:00, Ann <ann@example.com> wrote:\n> Hello,\n>\n\
        > My order 1042 arrived damaged: the box was crushed and the lamp inside is broken.\n>\n> Ann\n";
    let m2 = "Here it is.\n\nSent from my iPhone\n\n> On 3 Mar 2020, at 11:00, Support <help@shop.example> wrote:\n\
        > \n> Hello Ann,\n> \n> Sorry to hear that. Could you send a photo of the lamp?\n> \n> Best,\n> Support\n\
        > \n> On Tue, 3 Mar 2020 at 10:00, Ann <ann@example.com> wrote:\n>> Hello,\n>>\n\
        >> My order 1042 arrived damaged: the box was crushed and the lamp inside is broken.\n>>\n>> Ann\n";
    assert_eq!(
        walk(&[m0, m1, m2]),
        [
            m0.to_owned(),
            "Hello Ann,\n\nSorry to hear that. Could you send a photo of the lamp?\n\nBest,\nSupport".to_owned(),
            "Here it is.".to_owned(),
        ]
    );
}

#[test]
fn random_bodies_keep_the_invariants() {
    // Bodies drawn from pieces of real markers, CJK text, CRLF and stray bytes of
    // punctuation: stripping never panics, `removed` is the difference in characters,
    // and a body is returned whole exactly when nothing was removed.
    const PIECES: &[&str] = &[
        "Hello",
        " ",
        "\n",
        "\r\n",
        "> ",
        ">>",
        "-- ",
        "--",
        "On Tue, 3 Mar 2020 at 10:00 ",
        "Ann <ann@example.com>",
        " wrote:",
        "From: ",
        "Sent: ",
        "Subject: ",
        "-----Original Message-----",
        "Sent from my iPhone",
        "我们已经收到您的订单",
        "写道：",
        "é",
        "\u{a0}",
        "<",
        "@",
        ":",
        "—",
        "________________________________",
        "Am 3.3.2020 schrieb",
        "2011/4/7 ",
        "：",
        "\t",
    ];
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    let mut thread = PriorBodies::new();
    for round in 0..3000 {
        let body: String = (0..next(60)).map(|_| PIECES[next(PIECES.len())]).collect();
        let prior = if round % 2 == 0 {
            &thread
        } else {
            &PriorBodies::new()
        };
        let stripped = strip_quoted(&body, prior);
        assert_eq!(
            stripped.removed,
            body.chars().count() - stripped.text.chars().count(),
            "{body:?}"
        );
        assert_eq!(stripped.removed == 0, stripped.text == body, "{body:?}");
        thread.add(&body);
    }
}

/// Strips `body` on another thread; fails when it takes more than 120 s (no tight
/// timing: a debug build on a busy machine must pass; `benches/quoted.rs` measures).
fn strip_with_watchdog(name: &str, body: String, prior: PriorBodies) -> (usize, usize) {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let stripped = strip_quoted(&body, &prior);
        let _ = tx.send((stripped.text.len(), stripped.removed));
    });
    rx.recv_timeout(Duration::from_secs(120))
        .unwrap_or_else(|_| panic!("{name}: no result within 120 s"))
}

#[test]
fn large_bodies_in_linear_time() {
    // One line of 4 MiB of `>` (email_reply_parser's long quote, larger).
    let body = format!(
        "Hi\n{}\nA{}\nBye\n",
        ">".repeat(1 << 21),
        ">".repeat(1 << 21)
    );
    let len = body.len();
    assert_eq!(
        strip_with_watchdog("long line", body, PriorBodies::new()),
        (len, 0)
    );
    // 200,000 lines that each could open a split attribution, none closing one.
    let body = "On 3 March 2020 at 10:00 Ann\n".repeat(200_000);
    let len = body.len();
    assert_eq!(
        strip_with_watchdog("openers", body, PriorBodies::new()),
        (len, 0)
    );
    // A 10 MiB body, every line of it in a 10 MiB prior body, but the first.
    let quoted = "> the same words again and again, line after line\n".repeat(200_000);
    let mut prior = PriorBodies::new();
    prior.add(&quoted);
    let body = format!("Top line.\n{quoted}");
    let len = body.len();
    assert_eq!(strip_with_watchdog("known", body, prior), (9, len - 9));
}

/// An index made with room for its bodies strips as one that grew while they were added.
#[test]
fn an_index_made_with_room_strips_as_one_that_grew() {
    let bodies = [
        "Hello,\n\nThe parcel for order A-1 never arrived at the warehouse on Thursday.\n\nAlice",
        "Hi Alice,\n\nWe are checking with the carrier now.\n\nOn Mon, Alice wrote:\n> Hello,\n>\n> The parcel for order A-1 never arrived at the warehouse on Thursday.\n>\n> Alice",
        "Thanks.\n\nThe parcel for order A-1 never arrived at the warehouse on Thursday.\nIt is Friday now.",
    ];
    for bytes in [0, 1, 300, 1 << 20] {
        let (mut grown, mut roomy) = (PriorBodies::new(), PriorBodies::with_capacity(bytes));
        for body in bodies {
            let (a, b) = (grown.strip_next(body), roomy.strip_next(body));
            assert_eq!(
                (a.text, a.removed),
                (b.text, b.removed),
                "room for {bytes} bytes"
            );
        }
    }
}

/// What the third red team found removed from a customer's own request: lines that read
/// like markers in prose, which no mail client writes.
#[test]
fn ordinary_lines_that_look_like_markers_stay() {
    for body in [
        // An attribution needs a client's date: a digit, or a weekday and a comma.
        "Hi,\nOn Monday my manager wrote:\nplease refund the order, it was never used.\nKim",
        // Dashes inside a line of text are no signature line.
        "Hi,\nI need it -- urgently -- for Monday.\n--- see below ---\nKim",
        // `From:` and `Subject:` lines in prose, undated.
        "Hi,\nFrom: my side, the order is late.\nSubject: to your reply, I will wait a week.\nKim",
    ] {
        assert_eq!(strip(body), body, "{body}");
    }
    // What clients write still goes.
    assert_eq!(
        strip("Thanks!\n\nOn Monday, 9 March 2026, Ann wrote:\n> Is it late?"),
        "Thanks!"
    );
    assert_eq!(strip("Thanks!\n--\nKim Lee\nAcme Corp"), "Thanks!");
    assert_eq!(
        strip(
            "Thanks!\n\nFrom: Ann\nSent: Monday, March 9, 2026 10:00 AM\nTo: Kim\nSubject: Late\n\nIs it late?"
        ),
        "Thanks!"
    );
}

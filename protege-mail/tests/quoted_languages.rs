//! The markers of quoted mail in each language `strip_quoted` knows: attribution lines as
//! Gmail, Apple Mail, Outlook and Thunderbird write them, reply header blocks,
//! "original message" separators and mobile taglines. Each row is stripped from a
//! realistic body and the exact result asserted.

use protege_mail::{PriorBodies, strip_quoted};

fn strip(body: &str) -> String {
    strip_quoted(body, &PriorBodies::new()).text.into_owned()
}

const REPLY: &str = "The new date works for us.";

/// `REPLY`, the marker lines, then unquoted text: only a marker removes it.
fn assert_marker(language: &str, marker: &str) {
    let body = format!("{REPLY}\n\n{marker}\n\nThe earlier message, not marked as a quote.\nAnn\n");
    assert_eq!(strip(&body), REPLY, "{language}: {marker:?}");
}

#[test]
fn attribution_lines() {
    for (language, line) in [
        (
            "English (Gmail)",
            "On Tue, Mar 3, 2020 at 10:00 AM Ann Smith <ann@example.com> wrote:",
        ),
        (
            "English (Apple Mail)",
            "On 3 Mar 2020, at 10:00, Ann Smith <ann@example.com> wrote:",
        ),
        (
            "English (Thunderbird)",
            "On 03/03/2020 10:00, Ann Smith wrote:",
        ),
        ("English (Android)", "---- Ann Smith wrote ----"),
        (
            "French (Gmail)",
            "Le mar. 3 mars 2020 à 10:00, Ann Smith <ann@example.com> a écrit :",
        ),
        (
            "French (Thunderbird)",
            "Le 03/03/2020 à 10:00, Ann Smith a écrit :",
        ),
        (
            "German (Gmail)",
            "Am Di., 3. März 2020 um 10:00 Uhr schrieb Ann Smith <ann@example.com>:",
        ),
        (
            "German (Thunderbird)",
            "Am 03.03.2020 um 10:00 schrieb Ann Smith:",
        ),
        (
            "Spanish (Gmail)",
            "El mar., 3 mar. 2020 a las 10:00, Ann Smith (<ann@example.com>) escribió:",
        ),
        (
            "Italian (Gmail)",
            "Il giorno mar 3 mar 2020 alle ore 10:00 Ann Smith <ann@example.com> ha scritto:",
        ),
        (
            "Portuguese (Gmail)",
            "Em ter., 3 de mar. de 2020 às 10:00, Ann Smith <ann@example.com> escreveu:",
        ),
        (
            "Dutch (Gmail)",
            "Op di 3 mrt. 2020 om 10:00 schreef Ann Smith <ann@example.com>:",
        ),
        (
            "Dutch (Apple Mail)",
            "Op 3 mrt. 2020, om 10:00 heeft Ann Smith <ann@example.com> het volgende geschreven:",
        ),
        (
            "Swedish (Gmail)",
            "Den tis 3 mars 2020 kl 10:00 skrev Ann Smith <ann@example.com>:",
        ),
        (
            "Danish (Gmail)",
            "Den tir. 3. mar. 2020 kl. 10.00 skrev Ann Smith <ann@example.com>:",
        ),
        (
            "Norwegian (Gmail)",
            "tir. 3. mar. 2020 kl. 10:00 skrev Ann Smith <ann@example.com>:",
        ),
        (
            "Finnish (Gmail)",
            "ti 3. maalisk. 2020 klo 10.00 Ann Smith (ann@example.com) kirjoitti:",
        ),
        (
            "Finnish (Outlook)",
            "Ann Smith kirjoitti 3.3.2020 kello 10.00:",
        ),
        (
            "Polish (Gmail)",
            "wt., 3 mar 2020 o 10:00 Ann Smith <ann@example.com> napisał(a):",
        ),
        (
            "Polish (Thunderbird)",
            "W dniu 3.03.2020 o 10:00, Ann Smith pisze:",
        ),
        (
            "Russian (Gmail)",
            "вт, 3 мар. 2020 г. в 10:00, Ann Smith <ann@example.com>:",
        ),
        (
            "Russian (Apple Mail)",
            "3 марта 2020 г., в 10:00, Ann Smith <ann@example.com> написал(а):",
        ),
        (
            "Japanese (Gmail)",
            "2020年3月3日(火) 10:00 Ann Smith <ann@example.com>:",
        ),
        (
            "Japanese (Apple Mail)",
            "2020/03/03 10:00、Ann Smith <ann@example.com>のメール:",
        ),
        (
            "Chinese (Gmail)",
            "Ann Smith <ann@example.com> 于2020年3月3日周二 上午10:00写道：",
        ),
        (
            "Chinese, traditional (Gmail)",
            "Ann Smith <ann@example.com> 於 2020年3月3日 週二 上午10:00寫道：",
        ),
    ] {
        assert_marker(language, line);
    }
}

#[test]
fn attribution_lines_split_over_two_lines() {
    for (language, lines) in [
        (
            "English",
            "On Tue, Mar 3, 2020 at 10:00 AM Ann Smith from Accounting <\nann@example.com> wrote:",
        ),
        (
            "French",
            "Le mar. 3 mars 2020 à 10:00, Ann Smith <ann.smith@example.com> a\nécrit :",
        ),
        (
            "German",
            "Am Di., 3. März 2020 um 10:00 Uhr schrieb Ann Smith <\nann@example.com>:",
        ),
        (
            "Polish",
            "W dniu 28 stycznia 2015 01:53 użytkownik Zoe Smith <zoe@example.com>\nnapisał:",
        ),
        (
            "Russian",
            "02.04.2012 14:20 пользователь \"ann@example.com\" <\nann@example.com> написал:",
        ),
        (
            "Japanese",
            "2020年3月3日(火) 10:00 Ann Smith <\nann@example.com>:",
        ),
    ] {
        assert_marker(language, lines);
    }
}

#[test]
fn header_blocks() {
    for (language, [from, sent, to, subject]) in [
        ("English", ["From", "Sent", "To", "Subject"]),
        ("German", ["Von", "Gesendet", "An", "Betreff"]),
        ("French", ["De ", "Envoyé ", "À ", "Objet "]),
        ("Spanish", ["De", "Enviado", "Para", "Asunto"]),
        ("Italian", ["Da", "Inviato", "A", "Oggetto"]),
        ("Portuguese", ["De", "Enviado", "Para", "Assunto"]),
        ("Dutch", ["Van", "Verzonden", "Aan", "Onderwerp"]),
        ("Swedish", ["Från", "Skickat", "Till", "Ämne"]),
        ("Danish, Norwegian", ["Fra", "Sendt", "Til", "Emne"]),
        (
            "Finnish",
            ["Lähettäjä", "Lähetetty", "Vastaanottaja", "Aihe"],
        ),
        ("Polish", ["Od", "Wysłano", "Do", "Temat"]),
        ("Russian", ["От", "Отправлено", "Кому", "Тема"]),
        ("Japanese", ["差出人", "送信日時", "宛先", "件名"]),
        ("Chinese", ["发件人", "发送时间", "收件人", "主题"]),
    ] {
        let block = format!(
            "{from}: Ann Smith <ann@example.com>\n{sent}: 3.3.2020 10:00\n\
             {to}: Bob Jones <bob@example.com>\n{subject}: RE: Meeting"
        );
        assert_marker(language, &block);
        // Outlook's rule above the block.
        assert_marker(
            language,
            &format!("________________________________\n{block}"),
        );
    }
}

#[test]
fn separator_lines() {
    for phrase in [
        "Original Message",
        "Ursprüngliche Nachricht",
        "Message d'origine",
        "Mensaje original",
        "Messaggio originale",
        "Mensagem original",
        "Oorspronkelijk bericht",
        "Ursprungligt meddelande",
        "Oprindelig meddelelse",
        "Opprinnelig melding",
        "Alkuperäinen viesti",
        "Oryginalna wiadomość",
        "Исходное сообщение",
        "元のメッセージ",
        "原始邮件",
    ] {
        assert_marker(phrase, &format!("-----{phrase}-----"));
        assert_marker(phrase, &format!("----- {phrase} -----"));
    }
    for line in [
        "---------- Forwarded message ---------",
        "-------- Forwarded Message --------",
        "-------- Original Message --------",
        "Begin forwarded message:",
        "Début du message réexpédié :",
        "Anfang der weitergeleiteten Nachricht:",
    ] {
        assert_marker("forward", line);
    }
}

#[test]
fn mobile_taglines() {
    for tagline in [
        "Sent from my iPhone",
        "Sent from my Android",
        "Sent from my Samsung Galaxy smartphone.",
        "Sent from my Verizon Wireless BlackBerry",
        "Get Outlook for iOS",
        "Get Outlook for Android<https://aka.ms/ghei36>",
        "Envoyé de mon iPhone",
        "Von meinem iPhone gesendet",
        "Enviado desde mi iPhone",
        "Inviato da iPhone",
        "Enviado do meu iPhone",
        "Verstuurd vanaf mijn iPhone",
        "Skickat från min iPhone",
        "Sendt fra min iPhone",
        "Lähetetty iPhonesta",
        "Wysłane z iPhone'a",
        "Отправлено с iPhone",
        "iPhoneから送信",
        "从我的iPhone发送",
    ] {
        let body = format!("{REPLY}\n\n{tagline}\n");
        assert_eq!(strip(&body), REPLY, "{tagline:?}");
    }
}

#[test]
fn sentences_with_those_verbs_stay() {
    let body = "Am Montag schrieb mir der Kunde:\nalles gut.\n\
        Le client a écrit :\nmerci.\n\
        Kunden skrev:\ntack.\n\
        Il cliente ha scritto:\ngrazie.\n\
        Van: de klant\nAan: ons\n";
    assert_eq!(strip(body), body);
}

#[test]
fn chinese_quote_rewrapped_is_found_in_the_thread() {
    // No spaces between words: the quote is re-wrapped anywhere, and still matches.
    let first =
        "我们已经收到您的订单，预计将在三个工作日内发货。如有任何问题，请随时与我们联系。谢谢！";
    let reply = "好的，谢谢。\n\n> 我们已经收到您的订单，预计将在三个\n> 工作日内发货。如有任何问题，请随时与\n\
        > 我们联系。谢谢！\n\n另外，发票什么时候寄出？";
    let mut prior = PriorBodies::new();
    prior.add(first);
    assert_eq!(
        strip_quoted(reply, &prior).text,
        "好的，谢谢。\n\n另外，发票什么时候寄出？"
    );
}

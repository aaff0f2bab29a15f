//! The words that mark quoted mail, per language: attribution lines, reply and forward
//! header blocks, "original message" separators and mobile taglines. English, French,
//! German, Spanish, Italian, Portuguese, Dutch, Swedish, Danish, Norwegian, Finnish,
//! Polish, Russian, Japanese and Chinese (plus Vietnamese attribution lines). Adding a
//! language is adding rows here; `markers.rs` holds the matching.

/// How one language writes the line above a quote ("On … wrote:").
#[derive(Debug)]
pub(super) struct Attribution {
    /// Words the line opens with ("On", "Le"); empty when the language has no fixed
    /// opener (the date comes first).
    pub(super) openers: &'static [&'static str],
    /// Verbs the line ends with, before its colon: "wrote", "a écrit".
    pub(super) end_verbs: &'static [&'static str],
    /// Verbs inside the line, the name and the colon after them: "schrieb" in
    /// "Am 3. März 2020 um 10:00 schrieb Ann <ann@example.com>:".
    pub(super) inner_verbs: &'static [&'static str],
    /// Verbs the line ends with, before its colon, only when it also names an address in
    /// brackets: "sent" in "On 3 Mar 2020, at 10:00, Ann <ann@example.com> sent:" (a
    /// sentence such as "On 3 May we sent:" names none).
    pub(super) address_verbs: &'static [&'static str],
    /// Weekday and month names that give a line the shape of a date without a digit
    /// ("On Monday, Ann wrote:").
    pub(super) date_words: &'static [&'static str],
}

/// The attribution lines, one row per language (or family of languages).
pub(super) const ATTRIBUTIONS: &[Attribution] = &[
    // "On Tue, Mar 3, 2020 at 10:00 AM Ann <ann@example.com> wrote:"
    Attribution {
        openers: &["On"],
        end_verbs: &["wrote"],
        inner_verbs: &[],
        address_verbs: &["sent"],
        date_words: ENGLISH_DATE_WORDS,
    },
    // "Le mar. 3 mars 2020 à 10:00, Ann <ann@example.com> a écrit :"
    Attribution {
        openers: &["Le"],
        end_verbs: &["a écrit"],
        inner_verbs: &[],
        address_verbs: &[],
        date_words: &[],
    },
    // "Am Di., 3. März 2020 um 10:00 Uhr schrieb Ann <ann@example.com>:"
    Attribution {
        openers: &["Am"],
        end_verbs: &["schrieb"],
        inner_verbs: &["schrieb"],
        address_verbs: &[],
        date_words: &[],
    },
    // "El mar, 3 mar 2020 a las 10:00, Ann (<ann@example.com>) escribió:"
    Attribution {
        openers: &["El"],
        end_verbs: &["escribió"],
        inner_verbs: &[],
        address_verbs: &[],
        date_words: &[],
    },
    // "Il giorno mar 3 mar 2020 alle ore 10:00 Ann <ann@example.com> ha scritto:"
    Attribution {
        openers: &["Il"],
        end_verbs: &["ha scritto"],
        inner_verbs: &[],
        address_verbs: &[],
        date_words: &[],
    },
    // "Em ter., 3 de mar. de 2020 às 10:00, Ann <ann@example.com> escreveu:"
    Attribution {
        openers: &["Em", "No dia"],
        end_verbs: &["escreveu"],
        inner_verbs: &[],
        address_verbs: &[],
        date_words: &[],
    },
    // "Op di 3 mrt. 2020 om 10:00 schreef Ann <ann@example.com>:",
    // "Op 3 mrt. 2020, om 10:00 heeft Ann het volgende geschreven:"
    Attribution {
        openers: &["Op"],
        end_verbs: &["geschreven", "schreef"],
        inner_verbs: &["schreef"],
        address_verbs: &[],
        date_words: &[],
    },
    // Swedish, Danish, Norwegian: "Den tis 3 mars 2020 kl 10:00 skrev Ann <ann@example.com>:"
    Attribution {
        openers: &["Den", "På", "D."],
        end_verbs: &["skrev"],
        inner_verbs: &["skrev"],
        address_verbs: &[],
        date_words: &[],
    },
    // "ti 3. maalisk. 2020 klo 10.00 Ann (ann@example.com) kirjoitti:",
    // "Ann kirjoitti 3.3.2020 kello 10.00:"
    Attribution {
        openers: &[],
        end_verbs: &["kirjoitti"],
        inner_verbs: &["kirjoitti"],
        address_verbs: &[],
        date_words: &[],
    },
    // "W dniu 3.03.2020 o 10:00, Ann <ann@example.com> pisze:",
    // "wt., 3 mar 2020 o 10:00 Ann <ann@example.com> napisał(a):"
    Attribution {
        openers: &["W dniu"],
        end_verbs: &["napisał(a)", "napisał", "napisała", "pisze"],
        inner_verbs: &[],
        address_verbs: &[],
        date_words: &[],
    },
    // "3 марта 2020 г., в 10:00, Анна <ann@example.com> написал(а):"
    Attribution {
        openers: &[],
        end_verbs: &["написал(а)", "написал", "написала", "пишет"],
        inner_verbs: &[],
        address_verbs: &[],
        date_words: &[],
    },
    // "2020/03/03 10:00、Ann <ann@example.com>のメール:", "… さんは書きました:"
    Attribution {
        openers: &[],
        end_verbs: &["書きました", "のメッセージ", "のメール"],
        inner_verbs: &[],
        address_verbs: &[],
        date_words: &[],
    },
    // "Ann <ann@example.com> 于2020年3月3日周二 上午10:00写道："
    Attribution {
        openers: &[],
        end_verbs: &["写道", "寫道"],
        inner_verbs: &[],
        address_verbs: &[],
        date_words: &[],
    },
    // "Vào 10:00 3 tháng 3, 2020, Ann <ann@example.com> đã viết:"
    Attribution {
        openers: &["Vào"],
        end_verbs: &["đã viết"],
        inner_verbs: &[],
        address_verbs: &[],
        date_words: &[],
    },
];

/// English weekday and month names.
const ENGLISH_DATE_WORDS: &[&str] = &[
    "Mon",
    "Tue",
    "Wed",
    "Thu",
    "Fri",
    "Sat",
    "Sun",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
    "Jan",
    "Feb",
    "Mar",
    "Apr",
    "May",
    "Jun",
    "Jul",
    "Aug",
    "Sep",
    "Sept",
    "Oct",
    "Nov",
    "Dec",
    "January",
    "February",
    "March",
    "April",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// What a header line of a reply or forward block names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    /// The sender: From, Von, De, Da, Van, Från, Fra, Lähettäjä, Od, От, 差出人, 发件人.
    From,
    /// The date: Sent, Date, Gesendet, Envoyé, Enviado, Inviato, Verzonden, Skickat, …
    Date,
    /// The recipients: To, An, À, Para, A, Aan, Till, Til, Vastaanottaja, Do, Кому, 宛先.
    To,
    /// The copies: Cc and its translations.
    Cc,
    /// The subject: Subject, Betreff, Objet, Asunto, Oggetto, Onderwerp, Ämne, Emne, …
    Subject,
}

/// Header names of reply and forward blocks (compared ignoring ASCII case).
pub(super) const HEADER_KEYS: &[(&str, Role)] = &[
    // English
    ("From", Role::From),
    ("Sent", Role::Date),
    ("Date", Role::Date),
    // La Poste's webmail: "Message du : 12/12/2016 13:20".
    ("Message du", Role::Date),
    ("To", Role::To),
    ("Reply-To", Role::To),
    ("Cc", Role::Cc),
    ("Bcc", Role::Cc),
    ("Subject", Role::Subject),
    // German
    ("Von", Role::From),
    ("Gesendet", Role::Date),
    ("Datum", Role::Date),
    ("An", Role::To),
    ("Kopie", Role::Cc),
    ("Betreff", Role::Subject),
    // French, Spanish, Portuguese
    ("De", Role::From),
    ("Envoyé", Role::Date),
    ("Enviado", Role::Date),
    ("Enviado el", Role::Date),
    ("Enviada", Role::Date),
    ("Fecha", Role::Date),
    ("À", Role::To),
    ("Para", Role::To),
    ("Objet", Role::Subject),
    ("Asunto", Role::Subject),
    ("Assunto", Role::Subject),
    // Italian
    ("Da", Role::From),
    ("Inviato", Role::Date),
    ("Data", Role::Date),
    ("A", Role::To),
    ("Oggetto", Role::Subject),
    // Dutch
    ("Van", Role::From),
    ("Verzonden", Role::Date),
    ("Aan", Role::To),
    ("Onderwerp", Role::Subject),
    // Swedish, Danish, Norwegian
    ("Från", Role::From),
    ("Skickat", Role::Date),
    ("Till", Role::To),
    ("Kopia", Role::Cc),
    ("Ämne", Role::Subject),
    ("Fra", Role::From),
    ("Sendt", Role::Date),
    ("Dato", Role::Date),
    ("Til", Role::To),
    ("Kopi", Role::Cc),
    ("Emne", Role::Subject),
    // Finnish
    ("Lähettäjä", Role::From),
    ("Lähetetty", Role::Date),
    ("Päivämäärä", Role::Date),
    ("Vastaanottaja", Role::To),
    ("Kopio", Role::Cc),
    ("Aihe", Role::Subject),
    // Polish
    ("Od", Role::From),
    ("Wysłano", Role::Date),
    ("Do", Role::To),
    ("DW", Role::Cc),
    ("Temat", Role::Subject),
    // Russian
    ("От", Role::From),
    ("Отправлено", Role::Date),
    ("Дата", Role::Date),
    ("Кому", Role::To),
    ("Копия", Role::Cc),
    ("Тема", Role::Subject),
    // Japanese
    ("差出人", Role::From),
    ("送信日時", Role::Date),
    ("日付", Role::Date),
    ("宛先", Role::To),
    ("件名", Role::Subject),
    // Chinese (simplified, traditional)
    ("发件人", Role::From),
    ("发送时间", Role::Date),
    ("日期", Role::Date),
    ("收件人", Role::To),
    ("抄送", Role::Cc),
    ("主题", Role::Subject),
    ("寄件者", Role::From),
    ("寄件日期", Role::Date),
    ("收件者", Role::To),
    ("副本", Role::Cc),
    ("主旨", Role::Subject),
];

/// The words between the dashes of a separator line such as Outlook's
/// `-----Original Message-----`, Gmail's `---------- Forwarded message ---------` or
/// Thunderbird's `-------- Forwarded Message --------` (compared ignoring ASCII case).
pub(super) const SEPARATORS: &[&str] = &[
    "Original Message",
    "Reply Message",
    "Forwarded Message",
    "Ursprüngliche Nachricht",
    "Originalnachricht",
    "Weitergeleitete Nachricht",
    "Antwort Nachricht",
    "Message d'origine",
    "Message original",
    "Message transféré",
    "Mensaje original",
    "Mensaje reenviado",
    "Messaggio originale",
    "Messaggio inoltrato",
    "Mensagem original",
    "Mensagem encaminhada",
    "Oorspronkelijk bericht",
    "Origineel bericht",
    "Doorgestuurd bericht",
    "Ursprungligt meddelande",
    "Vidarebefordrat meddelande",
    "Oprindelig meddelelse",
    "Oprindelig besked",
    "Videresendt meddelelse",
    "Opprinnelig melding",
    "Videresendt melding",
    "Alkuperäinen viesti",
    "Välitetty viesti",
    "Oryginalna wiadomość",
    "Wiadomość oryginalna",
    "Przekazana wiadomość",
    "Исходное сообщение",
    "Пересылаемое сообщение",
    "Пересланное сообщение",
    "元のメッセージ",
    "転送されたメッセージ",
    "原始邮件",
    "转发的邮件",
    "原始郵件",
    "轉寄的郵件",
];

/// Lines that open a forwarded message without dashes (Apple Mail), compared without
/// their colon, ignoring ASCII case.
pub(super) const FORWARD_OPENERS: &[&str] = &[
    "Begin forwarded message",
    "Début du message réexpédié",
    "Anfang der weitergeleiteten Nachricht",
    "Inicio del mensaje reenviado",
    "Inizio messaggio inoltrato",
    "Início da mensagem reencaminhada",
    "Begin doorgestuurd bericht",
    "Vidarebefordrat brev",
    "Videresendt besked",
    "Videresendt melding",
    "Välitetty viesti alkaa",
    "Początek przekazywanej wiadomości",
    "Начало переадресованного сообщения",
    "転送されたメッセージ",
    "转发的邮件",
];

/// Mobile taglines that open with a fixed phrase and end with the device's name (one to
/// four words, no punctuation but a final full stop): "Sent from my Verizon Wireless
/// BlackBerry". The second word list is the phrase the line must end with, if any
/// ("Von meinem iPhone gesendet").
pub(super) const TAGLINE_OPENERS: &[(&str, &str)] = &[
    ("Sent from my", ""),
    ("Envoyé de mon", ""),
    ("Envoyé depuis mon", ""),
    ("Von meinem", "gesendet"),
    ("Gesendet von meinem", ""),
    ("Enviado desde mi", ""),
    ("Enviado do meu", ""),
    ("Enviado de meu", ""),
    ("Inviato dal mio", ""),
    ("Verstuurd vanaf mijn", ""),
    ("Verzonden vanaf mijn", ""),
    ("Skickat från min", ""),
    ("Sendt fra min", ""),
    ("Lähetetty laitteesta", ""),
    ("Wysłane z mojego", ""),
    ("Отправлено с моего", ""),
];

/// Mobile taglines matched as the whole line (ignoring ASCII case and a final full stop).
pub(super) const TAGLINES: &[&str] = &[
    "Get Outlook for iOS",
    "Get Outlook for Android",
    "Sent from Outlook",
    "Sent from Outlook for iOS",
    "Sent from Outlook for Android",
    "Envoyé à partir de Outlook pour iOS",
    "Envoyé à partir de Outlook pour Android",
    "Gesendet von Outlook für iOS",
    "Gesendet von Outlook für Android",
    "Sent from Mail for Windows",
    "Sent from Mail for Windows 10",
    "Sent from Yahoo Mail for iPhone",
    "Sent from Yahoo Mail on Android",
    "Sent from Yahoo Mail for iPad",
    "Sent from Samsung Mobile",
    "Sent from ProtonMail mobile",
    "Sent from Proton Mail mobile",
    "Sent from Gmail Mobile",
    "Sent from iPhone",
    "Sent from iPad",
    "Sent from BlueMail",
    "Sent with BlackBerry Work",
    "Inviato da iPhone",
    "Inviato da iPad",
    "Enviado desde iPhone",
    "Lähetetty iPhonesta",
    "Lähetetty iPadista",
    "Wysłane z iPhone'a",
    "Wysłane z iPhone",
    "Отправлено с iPhone",
    "Отправлено с iPad",
];

/// Chinese and Japanese taglines: the line opens with the first phrase and ends with the
/// second ("从我的iPhone发送", "iPhoneから送信").
pub(super) const CJK_TAGLINES: &[(&str, &str)] = &[
    ("从我的", "发送"),
    ("發自我的", ""),
    ("发自我的", ""),
    ("", "から送信"),
];

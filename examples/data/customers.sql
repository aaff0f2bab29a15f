-- The customer table the support persona reads with LoadRecord. Portable SQL
-- (SQLite, PostgreSQL, MariaDB); `protege demo` runs it once, when the table is missing.
-- Each statement ends with a `;` at the end of a line.
CREATE TABLE customers (
  id INTEGER PRIMARY KEY,
  email VARCHAR(255) NOT NULL,
  name VARCHAR(255) NOT NULL,
  plan VARCHAR(32) NOT NULL,
  seats INTEGER,
  since VARCHAR(10) NOT NULL,
  notes TEXT
);
INSERT INTO customers (id, email, name, plan, seats, since, notes) VALUES
  (1, 'alice@example.com', 'Alice Martin', 'pro', 5, '2024-05-02', 'Prefers email; owns Café Lumière'),
  (2, 'bob@example.com', 'Bob Okafor', 'free', NULL, '2025-11-20', NULL),
  (3, 'carol@example.com', 'Carol Jones', 'trial', 12, '2026-02-15', 'Trial ends 2026-03-15'),
  (4, 'dave@example.com', 'Dave Smith', 'business', 40, '2023-01-09', 'Weekly export every Monday'),
  (5, 'kim@example.com', 'Kim Lee', 'pro', 2, '2025-06-30', NULL),
  (6, 'mia@example.com', 'Mia Rossi', 'free', NULL, '2026-01-04', 'Reported a torn label before');

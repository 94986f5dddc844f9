/*
 * Buzz-wire contact box firmware — ATmega328P at 16 MHz (Arduino Uno/Nano class).
 *
 * Pins
 *   PD2 (INT0, Arduino D2)  contact input, internal pull-up; the loop touching the wire pulls it low
 *   PB0 (Arduino D8)        lamp output, active high
 *   PB1 (Arduino D9)        buzzer output, active high
 *
 * Time base: Timer1 free-running at F_CPU/8 = 2 MHz (0.5 µs ticks); its overflow (every 32768 µs)
 * extends it to seconds + microseconds. OCR1A fires every 250 µs for debounce sampling and the
 * 100 ms heartbeat. INT0 (any edge) timestamps raw edges to the microsecond.
 *
 * All sampling, debouncing and lamp/buzzer driving happens in interrupts, so the lamp and buzzer
 * follow a contact even if the host is slow or absent. The main loop only formats messages into an
 * interrupt-driven TX ring and parses host commands. Protocol: see PROTOCOL.md next to this file.
 */
#include <avr/interrupt.h>
#include <avr/io.h>
#include <avr/sleep.h>
#include <stdint.h>
#include <stdlib.h>

#define FW_VERSION "1.0.0"
#define PROTO_VERSION "1"

#ifndef DEBOUNCE_US_DEFAULT
#define DEBOUNCE_US_DEFAULT 2000
#endif
#define DEBOUNCE_US_MIN 100UL
#define DEBOUNCE_US_MAX 1000000UL

#define BAUD 115200UL
/* U2X mode: UBRR = F_CPU / (8 * BAUD) - 1, rounded (16 at 16 MHz → 117647 baud, +2.1 %, as Arduino). */
#define UBRR_VALUE ((F_CPU + 4UL * BAUD) / (8UL * BAUD) - 1UL)

#define TICK_US 250U                   /* sampling period */
#define TICK_T1 (TICK_US * 2U)         /* in Timer1 ticks (0.5 µs) */
#define HEARTBEAT_TICKS (100000U / TICK_US) /* 100 ms */

#define CONTACT_BIT PD2
#define LAMP_BIT PB0
#define BUZZER_BIT PB1

/* ---------------------------------------------------------------- time */

typedef struct {
  uint32_t sec;
  uint32_t usec; /* 0 … 999999 */
} board_time_t;

static volatile uint32_t base_sec;  /* time of the last Timer1 overflow */
static volatile uint32_t base_usec;

ISR(TIMER1_OVF_vect) {
  uint32_t us = base_usec + 32768UL;
  if (us >= 1000000UL) {
    us -= 1000000UL;
    base_sec++;
  }
  base_usec = us;
}

/* Board time now; safe in and out of interrupts. */
static void time_now(board_time_t *t) {
  uint8_t sreg = SREG;
  cli();
  uint16_t tc = TCNT1;
  uint32_t s = base_sec;
  uint32_t us = base_usec;
  /* an overflow that happened after cli() but is not yet serviced */
  if ((TIFR1 & _BV(TOV1)) && tc < 0x8000U) us += 32768UL;
  SREG = sreg;
  us += tc >> 1;
  while (us >= 1000000UL) {
    us -= 1000000UL;
    s++;
  }
  t->sec = s;
  t->usec = us;
}

/* Microseconds modulo 2^32, for differences only. */
static uint32_t time_u32(const board_time_t *t) { return t->sec * 1000000UL + t->usec; }

/* ---------------------------------------------------------------- contact + outputs */

enum { MODE_OFF = 0, MODE_ON = 1, MODE_AUTO = 2 };

static volatile uint8_t lamp_mode = MODE_AUTO;
static volatile uint8_t buzzer_mode = MODE_AUTO;
static volatile uint32_t debounce_us = DEBOUNCE_US_DEFAULT;

static volatile uint8_t raw_closed;    /* last raw level seen (1 = closed) */
static volatile board_time_t raw_edge; /* when the raw level last changed */
static volatile uint8_t stable_closed; /* debounced state */

typedef struct {
  board_time_t t;
  uint8_t closed;
} edge_t;

#define EDGE_Q 8
static volatile edge_t edge_q[EDGE_Q];
static volatile uint8_t edge_head, edge_tail;
static volatile uint8_t edge_dropped; /* edges lost because the queue was full */
static volatile uint8_t heartbeat_due;
static uint16_t hb_ticks; /* only touched in the tick ISR */

static uint8_t read_closed(void) { return (PIND & _BV(CONTACT_BIT)) ? 0 : 1; }

/* Drive lamp and buzzer from their modes and the debounced state. Call with interrupts off. */
static void apply_outputs(void) {
  uint8_t lamp = lamp_mode == MODE_AUTO ? stable_closed : lamp_mode;
  uint8_t buzz = buzzer_mode == MODE_AUTO ? stable_closed : buzzer_mode;
  uint8_t b = PORTB & (uint8_t) ~(_BV(LAMP_BIT) | _BV(BUZZER_BIT));
  if (lamp) b |= _BV(LAMP_BIT);
  if (buzz) b |= _BV(BUZZER_BIT);
  PORTB = b;
}

static void note_raw_edge(uint8_t level) {
  board_time_t t;
  time_now(&t);
  raw_closed = level;
  raw_edge.sec = t.sec;
  raw_edge.usec = t.usec;
}

ISR(INT0_vect) {
  uint8_t level = read_closed();
  if (level != raw_closed) note_raw_edge(level);
}

ISR(TIMER1_COMPA_vect) {
  OCR1A += TICK_T1;
  uint8_t level = read_closed();
  if (level != raw_closed) note_raw_edge(level); /* an edge INT0 has not reported yet */
  if (raw_closed != stable_closed) {
    board_time_t now;
    time_now(&now);
    board_time_t since = {raw_edge.sec, raw_edge.usec};
    if (time_u32(&now) - time_u32(&since) >= debounce_us) {
      stable_closed = raw_closed;
      apply_outputs();
      uint8_t next = (uint8_t)((edge_head + 1) % EDGE_Q);
      if (next == edge_tail) {
        if (edge_dropped < 255) edge_dropped++;
      } else {
        edge_q[edge_head].t.sec = since.sec;
        edge_q[edge_head].t.usec = since.usec;
        edge_q[edge_head].closed = stable_closed;
        edge_head = next;
      }
    }
  }
  if (++hb_ticks >= HEARTBEAT_TICKS) {
    hb_ticks = 0;
    heartbeat_due = 1;
  }
}

/* ---------------------------------------------------------------- UART */

#define TX_SIZE 256 /* power of two; uint8_t indices wrap by themselves */
static volatile uint8_t tx_buf[TX_SIZE];
static volatile uint8_t tx_head, tx_tail;

#define RX_SIZE 64
static volatile uint8_t rx_buf[RX_SIZE];
static volatile uint8_t rx_head, rx_tail;

ISR(USART_UDRE_vect) {
  if (tx_head == tx_tail) {
    UCSR0B &= (uint8_t)~_BV(UDRIE0);
  } else {
    UDR0 = tx_buf[tx_tail];
    tx_tail = (uint8_t)(tx_tail + 1);
  }
}

ISR(USART_RX_vect) {
  uint8_t c = UDR0;
  uint8_t next = (uint8_t)((rx_head + 1) % RX_SIZE);
  if (next != rx_tail) {
    rx_buf[rx_head] = c;
    rx_head = next;
  }
}

/* Queue one byte. Waits (main loop only, interrupts keep running) when the ring is full. */
static void tx_put(uint8_t c) {
  uint8_t next = (uint8_t)(tx_head + 1);
  while (next == tx_tail) {
  }
  tx_buf[tx_head] = c;
  tx_head = next;
  UCSR0B |= _BV(UDRIE0);
}

static void uart_init(void) {
  UBRR0H = (uint8_t)(UBRR_VALUE >> 8);
  UBRR0L = (uint8_t)UBRR_VALUE;
  UCSR0A = _BV(U2X0);
  UCSR0C = _BV(UCSZ01) | _BV(UCSZ00); /* 8N1 */
  UCSR0B = _BV(RXEN0) | _BV(TXEN0) | _BV(RXCIE0);
}

/* ---------------------------------------------------------------- messages */

static uint32_t seq;
static char msg[72];
static uint8_t msg_len;

static void msg_str(const char *s) {
  while (*s && msg_len < sizeof(msg) - 5) msg[msg_len++] = *s++;
}

static void msg_u32(uint32_t v) {
  char tmp[11];
  ultoa(v, tmp, 10);
  msg_str(tmp);
}

static void msg_field_u32(uint32_t v) {
  msg_str(",");
  msg_u32(v);
}

/* ",<t_us>" in decimal, from seconds + microseconds without 64-bit division. */
static void msg_time(const board_time_t *t) {
  char tmp[11];
  msg_str(",");
  if (t->sec == 0) {
    msg_u32(t->usec);
    return;
  }
  msg_u32(t->sec);
  ultoa(t->usec, tmp, 10);
  uint8_t n = 0;
  while (tmp[n]) n++;
  for (uint8_t i = n; i < 6; i++) msg_str("0");
  msg_str(tmp);
}

/* Start "$<type>,<seq>,<t_us>" with the given board time (now when t is NULL). */
static void msg_begin(char type, const board_time_t *t) {
  board_time_t now;
  if (!t) {
    time_now(&now);
    t = &now;
  }
  msg_len = 0;
  msg[msg_len++] = '$';
  msg[msg_len++] = type;
  msg_field_u32(seq++);
  msg_time(t);
}

static const char HEX[] = "0123456789ABCDEF";

/* Append "*<checksum>\n" (XOR of every byte between '$' and '*') and queue the line. */
static void msg_send(void) {
  uint8_t cs = 0;
  for (uint8_t i = 1; i < msg_len; i++) cs ^= (uint8_t)msg[i];
  msg[msg_len++] = '*';
  msg[msg_len++] = HEX[cs >> 4];
  msg[msg_len++] = HEX[cs & 0x0F];
  msg[msg_len++] = '\n';
  for (uint8_t i = 0; i < msg_len; i++) tx_put((uint8_t)msg[i]);
}

static void send_version(void) {
  msg_begin('V', 0);
  msg_str(",buzzbox," FW_VERSION "," PROTO_VERSION);
  msg_field_u32(debounce_us);
  msg_send();
}

static void send_nack(const char *code) {
  msg_begin('N', 0);
  msg_str(",");
  msg_str(code);
  msg_send();
}

static char mode_char(uint8_t m) { return m == MODE_AUTO ? 'A' : (char)('0' + m); }

/* ---------------------------------------------------------------- host commands */

#define LINE_MAX 40
static char line[LINE_MAX + 1];
static uint8_t line_len;
static uint8_t line_overflow;

static int8_t hex_val(char c) {
  if (c >= '0' && c <= '9') return (int8_t)(c - '0');
  if (c >= 'A' && c <= 'F') return (int8_t)(c - 'A' + 10);
  if (c >= 'a' && c <= 'f') return (int8_t)(c - 'a' + 10);
  return -1;
}

static int8_t parse_mode(const char *s) {
  if (s[1] != 0) return -1;
  if (s[0] == '0') return MODE_OFF;
  if (s[0] == '1') return MODE_ON;
  if (s[0] == 'A') return MODE_AUTO;
  return -1;
}

/* Handle one complete line without its '\n'. Every line that starts with '!' gets exactly one reply. */
static void handle_line(void) {
  if (line_len == 0 || line[0] != '!') return; /* noise */
  if (line_overflow) {
    send_nack("LEN");
    return;
  }
  line[line_len] = 0;
  /* find '*', verify the checksum */
  uint8_t star = 0;
  for (uint8_t i = 1; i < line_len; i++)
    if (line[i] == '*') {
      star = i;
      break;
    }
  if (star == 0 || star + 3 != line_len) {
    send_nack("CS");
    return;
  }
  int8_t hi = hex_val(line[star + 1]);
  int8_t lo = hex_val(line[star + 2]);
  uint8_t cs = 0;
  for (uint8_t i = 1; i < star; i++) cs ^= (uint8_t)line[i];
  if (hi < 0 || lo < 0 || (uint8_t)((hi << 4) | lo) != cs) {
    send_nack("CS");
    return;
  }
  line[star] = 0;
  char cmd = line[1];
  const char *arg = 0;
  if (line[2] == ',') {
    arg = &line[3];
  } else if (line[2] != 0) {
    send_nack("CMD");
    return;
  }

  switch (cmd) {
    case 'L':
    case 'B': {
      int8_t m = arg ? parse_mode(arg) : -1;
      if (m < 0) {
        send_nack("ARG");
        return;
      }
      cli();
      if (cmd == 'L')
        lamp_mode = (uint8_t)m;
      else
        buzzer_mode = (uint8_t)m;
      apply_outputs();
      sei();
      char reply[4] = {',', cmd, ',', mode_char((uint8_t)m)};
      msg_begin('A', 0);
      for (uint8_t i = 0; i < 4; i++) msg[msg_len++] = reply[i];
      msg_send();
      return;
    }
    case 'P':
      if (arg) {
        send_nack("ARG");
        return;
      }
      msg_begin('P', 0);
      msg_send();
      return;
    case 'R':
      if (arg) {
        send_nack("ARG");
        return;
      }
      seq = 0;
      msg_begin('A', 0);
      msg_str(",R");
      msg_send();
      return;
    case 'V':
      if (arg) {
        send_nack("ARG");
        return;
      }
      send_version();
      return;
    case 'D': {
      if (!arg || !*arg) {
        send_nack("ARG");
        return;
      }
      uint32_t v = 0;
      for (const char *p = arg; *p; p++) {
        if (*p < '0' || *p > '9' || v > 100000000UL) {
          send_nack("ARG");
          return;
        }
        v = v * 10 + (uint32_t)(*p - '0');
      }
      if (v < DEBOUNCE_US_MIN || v > DEBOUNCE_US_MAX) {
        send_nack("ARG");
        return;
      }
      cli();
      debounce_us = v;
      sei();
      msg_begin('A', 0);
      msg_str(",D");
      msg_field_u32(v);
      msg_send();
      return;
    }
    default:
      send_nack("CMD");
      return;
  }
}

static void poll_rx(void) {
  while (rx_tail != rx_head) {
    char c = (char)rx_buf[rx_tail];
    rx_tail = (uint8_t)((rx_tail + 1) % RX_SIZE);
    if (c == '\r') continue;
    if (c == '\n') {
      handle_line();
      line_len = 0;
      line_overflow = 0;
      continue;
    }
    if (c == '!' ) { /* a new command start resynchronises after garbage */
      line_len = 0;
      line_overflow = 0;
    }
    if (line_len < LINE_MAX)
      line[line_len++] = c;
    else
      line_overflow = 1;
  }
}

/* ---------------------------------------------------------------- main */

int main(void) {
  /* outputs low, contact input with pull-up */
  DDRB |= _BV(LAMP_BIT) | _BV(BUZZER_BIT);
  PORTB &= (uint8_t) ~(_BV(LAMP_BIT) | _BV(BUZZER_BIT));
  DDRD &= (uint8_t)~_BV(CONTACT_BIT);
  PORTD |= _BV(CONTACT_BIT);

  /* Timer1: normal mode, clk/8; overflow + compare A interrupts */
  TCCR1A = 0;
  TCCR1B = _BV(CS11);
  OCR1A = TICK_T1;
  TIMSK1 = _BV(TOIE1) | _BV(OCIE1A);

  /* INT0 on any logical change */
  EICRA = _BV(ISC00);
  EIMSK = _BV(INT0);

  uart_init();

  raw_closed = read_closed();
  stable_closed = raw_closed;
  apply_outputs();
  sei();

  send_version();
  if (stable_closed) { /* report a contact that is already closed at power-on */
    board_time_t t;
    time_now(&t);
    msg_begin('C', &t);
    msg_field_u32(1);
    msg_send();
  }

  for (;;) {
    while (edge_tail != edge_head) {
      board_time_t t = {edge_q[edge_tail].t.sec, edge_q[edge_tail].t.usec};
      uint8_t closed = edge_q[edge_tail].closed;
      edge_tail = (uint8_t)((edge_tail + 1) % EDGE_Q);
      msg_begin('C', &t);
      msg_field_u32(closed);
      msg_send();
    }
    poll_rx();
    if (heartbeat_due) {
      heartbeat_due = 0;
      cli();
      uint8_t c = stable_closed, l = lamp_mode, b = buzzer_mode, d = edge_dropped;
      edge_dropped = 0;
      sei();
      msg_begin('H', 0);
      msg_field_u32(c);
      msg_str(",");
      msg[msg_len++] = mode_char(l);
      msg_str(",");
      msg[msg_len++] = mode_char(b);
      msg_field_u32(d);
      msg_send();
    }
    /* idle until the next interrupt (timers and UART keep running) */
    cli();
    if (edge_tail == edge_head && rx_tail == rx_head && !heartbeat_due) {
      set_sleep_mode(SLEEP_MODE_IDLE);
      sleep_enable();
      sei();
      sleep_cpu();
      sleep_disable();
    }
    sei();
  }
}

const n = parseInt(require('fs').readFileSync(0, 'utf8'), 10);
let rows = 1;
for (let a = 1; a * a <= n; a++) {
  if (n % a === 0) rows = a;
}
console.log(`${rows} ${n / rows}`);

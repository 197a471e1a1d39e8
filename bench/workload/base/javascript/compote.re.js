const lines = require('fs').readFileSync(0, 'utf8').split('\n');
const [a, b, c] = lines[0].split(' ').map(Number);
const k = Math.min(a, Math.floor(b / 2), Math.floor(c / 4));
if (Number.isNaN(k)) {
  throw new Error('bad input');
}
console.log(k * 7);

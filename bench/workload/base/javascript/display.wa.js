const n = parseInt(require('fs').readFileSync(0, 'utf8'), 10);
const a = Math.floor(Math.sqrt(n));
// the square root is the best number of rows
console.log(`${a} ${Math.ceil(n / a)}`);
